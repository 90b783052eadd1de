"""Audio codecs of the codec-LM generators: SNAC (Orpheus), X-codec2 (Llasa), BiCodec (Spark-TTS)."""
