// The page's microphone capture (an AudioWorklet, in a 16 kHz AudioContext): the input's first channel
// as 16-bit PCM, posted to the page in 32 ms frames (512 samples, one chunk of the voice detector), which
// it sends to the agent's /ws. The browser resamples the microphone to the context's rate. A frame's
// first sample waits for its last before it is sent: 100 ms frames made the end of a turn reach the
// detector 50 ms late on average (up to 100); 32 ms frames are 31 messages a second.
const FRAME_SAMPLES = 512;

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
