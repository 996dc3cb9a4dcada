"""What is said: the speech text a listener hears (`speech_text.py`), espeak-ng G2P and the 510-token
split (`g2p.py`), and when each written word is heard (`timings.py`). Import-free: the agent image
copies `speech_text.py` with this file."""
