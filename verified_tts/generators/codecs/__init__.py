"""Audio codecs of the codec-LM generators: SNAC, X-codec2 and BiCodec (tokens <-> audio)."""
