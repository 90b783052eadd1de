"""Who speaks in a book: the characters a reader finds (named, described, the narrator), the
quotes of the decoded text with their offsets, and the sieve that gives each quote a speaker, a
reason and a confidence (:mod:`.quotes`, :mod:`.mentions`, :mod:`.characters`, :mod:`.sieve`,
:mod:`.turns`, :mod:`.report`), and the order in which a cast hands out voices
(:mod:`.voice_order`)."""
