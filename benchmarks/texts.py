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
