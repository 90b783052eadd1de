"""The text front-end: books and subtitles in, spoken segments out.

:mod:`~verified_tts.text.book` reads a Markdown book into chapters of segments (Markdown structure
from :mod:`~verified_tts.text.markdown_book`, sentences from :mod:`~verified_tts.text.sentences`,
spoken forms from :mod:`~verified_tts.text.normalize`); :mod:`~verified_tts.text.subtitles` reads
SRT and WebVTT cues and :mod:`~verified_tts.text.cues` turns them into segments;
:mod:`~verified_tts.text.textfile` is the one reader of user text files behind both.
"""
