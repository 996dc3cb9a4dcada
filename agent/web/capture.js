// The page's microphone capture (an AudioWorklet, in a 16 kHz AudioContext): the input's first channel
// as 16-bit PCM, posted to the page in 100 ms frames (1,600 samples), which it sends to the agent's /ws.
// The browser resamples the microphone to the context's rate; 100 ms frames keep the WebSocket at ten
// messages a second while the voice detector still hears the end of a turn within a frame.
const FRAME_SAMPLES = 1600;

class PcmCapture extends AudioWorkletProcessor {
  constructor() {
    super();
    this.frame = new Int16Array(FRAME_SAMPLES);
    this.filled = 0;
  }

  process(inputs) {
    const channel = inputs[0]?.[0];
    if (!channel) return true;
    for (let i = 0; i < channel.length; i++) {
      const v = Math.max(-1, Math.min(1, channel[i]));
      this.frame[this.filled++] = v < 0 ? v * 32768 : v * 32767;
      if (this.filled === FRAME_SAMPLES) {
        this.port.postMessage(this.frame, [this.frame.buffer]);
        this.frame = new Int16Array(FRAME_SAMPLES);
        this.filled = 0;
      }
    }
    return true;
  }
}

registerProcessor("pcm-capture", PcmCapture);
