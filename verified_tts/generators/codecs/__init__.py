"""Audio codecs of the codec-LM generators: token ids to waveform and back (SNAC for Orpheus)."""
