"""The texts the studies speak."""

from __future__ import annotations

# The article's transport text: four sentences, 267 characters.
ARTICLE_TEXT = (
    "Thanks for waiting, I found your order and everything looks fine. It shipped yesterday evening from "
    "our Denver warehouse and should arrive on Thursday. If you need it sooner, I can upgrade the shipping "
    "at no extra cost. Would you like me to do that for you right now?"
)
FIRST_SENTENCE = ARTICLE_TEXT.split(". ")[0] + "."

# What the container studies speak (`benchmarks/container.py`): a four-sentence answer (213 characters)
# and its first sentence; a 10-word sentence for the concurrency runs; sentences of 10, 20 and 25 words
# for streamed against whole-segment decoding.
ANSWER = (
    "Thanks for waiting, I found your order. It shipped yesterday from our Denver warehouse and should "
    "arrive on Thursday. If you need it sooner, I can upgrade the shipping at no cost. Would you like me to "
    "do that now?"
)
ANSWER_FIRST_SENTENCE = ANSWER.split(". ")[0] + "."
TEN_WORDS = "It shipped yesterday and should arrive here on Thursday morning."
SENTENCES_BY_WORDS = {
    10: "Thanks for waiting, I found your order and it shipped.",
    20: "It shipped yesterday from our Denver warehouse and should arrive on Thursday, so you will have "
    "it before the weekend.",
    25: "If you need it sooner, I can upgrade the shipping at no cost, and the driver will call you an "
    "hour before arriving at your door.",
}

# 24 clips of varied length and content for the codec study (numbers written out: the offline ASR
# scores words).
CLIPS = (
    "Hello there.",
    "Your table for four is ready.",
    "The train to Boston leaves from platform nine.",
    "Please hold on while I check that for you.",
    "It will be sunny this afternoon, with a light breeze from the west.",
    "Your package was delivered to the front desk at noon.",
    "I have moved your appointment to Friday morning.",
    "The museum opens at ten and closes at six.",
    "Sorry, I did not catch that. Could you say it again?",
    "Turn left at the next light, then keep right.",
    "Your balance is twelve dollars and forty cents.",
    "The meeting has been cancelled because the room is flooded.",
    "Good morning! Coffee is ready in the kitchen.",
    "We received your payment, thank you.",
    "Remember to bring your passport and a pen.",
    "The library has three copies of that book, and one is available today.",
    "Your flight is delayed by forty minutes.",
    "Would you like the red one or the blue one?",
    "The doctor will see you in a few minutes.",
    "Dinner is at seven, and the guests arrive at half past six.",
    "I found two hotels near the river with free parking.",
    "Press the green button to start the machine.",
    "Yes.",
    "The storm knocked out power in the northern part of the city, but crews expect to restore it "
    "by midnight.",
)

# Held out from every tuning of the window plan and the scheduler (`benchmarks/playback.py`): eight
# four-sentence answers a voice agent might give, each opening with a sentence of exactly 20 words;
# session n of a playback run speaks answer n mod 8, so concurrent sessions do not speak in lockstep.
PLAYBACK_ANSWERS = (
    "I checked the schedule for you, and the last train to the airport leaves the central station at "
    "eleven tonight. It stops twice on the way. The ride takes about forty minutes. Would you like me to "
    "buy a ticket?",
    "Your dentist appointment has been moved from Tuesday morning to Wednesday afternoon, because the "
    "clinic is closed for a holiday. The new time is half past two. They will send a reminder the day "
    "before. Is that time all right for you?",
    "The weather tomorrow looks dry in town, with some clouds in the morning and a light wind "
    "from the north. Rain may arrive late in the evening. Take a jacket if you plan to stay out. Shall I "
    "set a reminder?",
    "I found three Italian restaurants near your hotel that still have a free table for two at eight "
    "o'clock tonight. The closest one has the best reviews. It also serves food without gluten. Do you "
    "want me to book it?",
    "Your electricity bill for last month came to sixty dollars, which is a little lower than "
    "it was last year. The payment is due on Friday. Automatic payment is switched on. Anything else "
    "I can check?",
    "The library book you borrowed about sailing is due back next Monday, and nobody else has reserved "
    "it yet, luckily. You can renew it twice online. Each renewal adds three weeks. Should I renew it "
    "now?",
    "Your flight to Chicago is on time, and boarding starts at gate twelve about forty minutes before "
    "it takes off. Security lines are short right now. Your seat is by the window. Do "
    "you need a ride there?",
    "The package with your new running shoes left the warehouse this morning, and the driver expects to "
    "arrive before six. Someone must sign for it. The neighbours can sign as well. "
    "Shall I tell the courier?",
)
PLAYBACK_FIRST_SENTENCE_WORDS = 20

# Held out from the tuning of word timings (`tts/text/timings.py` was tuned on `CLIPS`): sixteen
# sentences a voice agent might say, scored against Whisper's word timings (`benchmarks/timestamps.py`;
# numbers written out, so that Whisper's words and the written words compare one to one).
TIMESTAMP_SENTENCES = (
    "Your order of two blue lamps will arrive on Monday afternoon.",
    "I moved the call with your manager to half past three.",
    "The bakery on the corner sells fresh bread until noon.",
    "Sorry, the printer on the second floor is out of paper again.",
    "Your taxi is waiting outside, and the driver's name is Maria.",
    "Tomorrow will be cloudy, with rain in the evening.",
    "The gym is open every day except Sunday, from six until ten.",
    "I added milk, eggs and coffee to your shopping list.",
    "Your phone bill is lower this month, because roaming was free.",
    "The concert starts at eight, so leave the house by seven.",
    "Please remember to water the plants before you travel.",
    "The museum has a new exhibition about ancient maps.",
    "Your parcel was left with the neighbour at number twelve.",
    "I could not find a hotel with a pool, but one has a sauna.",
    "The bridge is closed for repairs until the end of the month.",
    "Would you like me to read the reviews of that restaurant?",
)

# What the turn-taking study (`benchmarks/voice_turn.py`) has people say. One-sentence questions, each a
# finished turn: end of speech to first audio is measured on them.
SPOKEN_QUESTIONS = (
    "What is the capital of France?",
    "How many legs does a spider have?",
    "Can you tell me a fun fact about the moon?",
    "What should I cook for dinner tonight?",
    "Why is the sky blue?",
    "How far away is the sun?",
    "What time does the museum open on Sunday?",
    "Which planet is closest to the sun?",
)
# Questions with a thinking pause inside, after the first N words (a place a speaker looking for the next
# word stops: after "a", "the", "to", "my", or mid-phrase; the "Could you find me ... a train").
PAUSED_QUESTIONS = (
    ("Could you find me a train to the coast on Saturday?", 5),
    ("What is the weather going to be like in Paris tomorrow?", 3),
    ("Can you remind me to call my sister at six?", 5),
    ("How long does it take to boil an egg?", 6),
    ("I would like to book a table for two tonight.", 6),
    ("Tell me about the history of Rome.", 4),
    ("Should I bring my umbrella today?", 4),
    ("Could you find me a train to the coast on Saturday?", 4),
)
PAUSES_S = (0.5, 1.0, 1.5)
# Said over a spoken answer, none of which should stop it, and a question that should.
BACKCHANNELS_SAID = ("Mm-hmm.", "Yeah.", "Okay.", "Sure.", "Uh-huh.", "Yeah.", "Okay.", "Sure.")
LONG_ANSWER_PROMPT = "Tell me a long story about a dragon who learns to cook."
INTERRUPTING_QUESTION = "Wait, what is the capital of Spain?"
