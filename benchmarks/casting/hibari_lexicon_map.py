"""How close is a lexicon entry's espeak-ng IPA, mapped to misaki, to hibari's own reading?

Lexicon entries write phonemes in espeak-ng IPA (what Piper voices read); the hibari generator maps
them to misaki's alphabet (verified_tts.generators.hibari_phonemes). For the most frequent English
words (wordfreq, alphabetic, 3+ letters) this reads each with espeak-ng (en-us), maps it, and
compares with hibari's own G2P: the share identical, identical once stress marks are ignored, and
examples of the rest (mostly reduced vowels, ɪ against ə, and lexicon stress on function words,
where both readings are acceptable). Writes benchmarks/results/hibari_lexicon_map.json.

Usage: python -m benchmarks.casting.hibari_lexicon_map [--words 1000]
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "benchmarks" / "results" / "hibari_lexicon_map.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--words", type=int, default=1000)
    args = parser.parse_args()

    import hibari
    import wordfreq
    from hibari.g2p import G2P

    from verified_tts.generators.hibari_phonemes import misaki_from_ipa
    from verified_tts.generators.piper_phonemes import espeak_clauses

    g2p = G2P()
    words = [w for w in wordfreq.top_n_list("en", 5 * args.words) if w.isalpha() and len(w) > 2]
    words = words[: args.words]

    def unstressed(phonemes: str) -> str:
        return phonemes.replace("ˈ", "").replace("ˌ", "").rstrip(".")

    exact = loose = 0
    differ = []
    for word in words:
        ipa = "".join(clause.phonemes for clause in espeak_clauses(word, "en-us"))
        mapped, own = misaki_from_ipa(ipa), g2p(word).rstrip(".")
        exact += mapped == own
        if unstressed(mapped) == unstressed(own):
            loose += 1
        else:
            differ.append({"word": word, "espeak": ipa, "mapped": mapped, "hibari": own})
    result = {
        "hibari": hibari.__version__,
        "wordfreq": importlib.metadata.version("wordfreq"),
        "words": len(words),
        "identical": round(exact / len(words), 4),
        "identical_ignoring_stress": round(loose / len(words), 4),
        "differ_examples": differ[:40],
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print({k: v for k, v in result.items() if k != "differ_examples"}, f"-> {OUT}")


if __name__ == "__main__":
    main()
