"""What crosses the wire: audio and control in, transcripts and typed errors out."""
