"""What the EPUB reader makes of real publishers' books: chapters, words read, what it left out.

Reads every ``*.epub`` in a folder, and every unpacked EPUB folder in it (one holding
``META-INF/container.xml``, as the IDPF's epub3-samples and Standard Ebooks' ``src/`` are kept;
zipped here into a temporary EPUB with ``mimetype`` first, uncompressed), through
``load_input`` with the render defaults (automatic TOC depth, extras left out), and records for
each book: its language and whether the default voice speaks it (``check_language``), the TOC
depth chosen and the depths it has, the chapters (number, title, words), the words and characters
read (characters for scripts written without spaces), what was left out and why (the first
150 chapters and lines of a long book), the warnings
about its own pronunciations and how many lexicon entries it brought; or the one-line error it
was refused with. With ``--piper``, the book's own phonemes (PLS entries and ``ssml:ph``) are
put through the default Piper voice's phonemizer as a render would: how many (word, IPA) pairs
land in the sentence's phonemes, which stay espeak-ng's (the word's phonemes change in context),
and any symbol without an id in the voice. Nothing is spoken, so the figures do not depend on the
machine. Writes benchmarks/results/epub_samples.json.

Usage: python -m benchmarks.real_prose.epub_samples FOLDER [FOLDER ...] [--piper] [--output JSON]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LISTED = 150  # chapters and left-out lines kept per book (the counts are of all)


def pack(folder: Path, into: Path, name: str) -> Path:
    """An unpacked EPUB folder as an EPUB file: ``mimetype`` first and stored, as OCF asks."""
    path = into / f"{name}.epub"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        mimetype = folder / "mimetype"
        archive.writestr(
            "mimetype",
            mimetype.read_bytes() if mimetype.is_file() else b"application/epub+zip",
            compress_type=zipfile.ZIP_STORED,
        )
        for file in sorted(folder.rglob("*")):
            if file.is_file() and file != mimetype:
                archive.write(file, file.relative_to(folder).as_posix())
    return path


def books(folders: list[Path], into: Path) -> list[tuple[str, Path]]:
    found = []
    for folder in folders:
        if (folder / "META-INF" / "container.xml").is_file():
            # a Standard Ebooks repository keeps the EPUB in src/: name it by the repository
            name = folder.parent.name if folder.name == "src" else folder.name
            found.append((name, pack(folder, into, name)))
            continue
        for entry in sorted(folder.iterdir()):
            if entry.suffix.lower() == ".epub" and entry.is_file():
                found.append((entry.stem, entry))
            elif (entry / "META-INF" / "container.xml").is_file():
                found.append((entry.name, pack(entry, into, entry.name)))
    return found


def piper_placement(loaded, mapper) -> dict:
    """The book's phoneme pairs as the Piper generator splices them into each utterance."""
    pairs, unmatched, missing = 0, [], set()
    for segment in loaded.book.segments:
        if not segment.phonemes:
            continue
        sentences, left = mapper.phonemize_with(segment.spoken, segment.phonemes)
        pairs += len(segment.phonemes)
        unmatched += left
        for sentence in sentences:
            missing |= set(mapper.ids(sentence)[1])
    return {
        "pairs": pairs,
        "placed": pairs - len(unmatched),
        "kept_espeak_ng": sorted(set(unmatched)),
        "symbols_without_id": sorted(missing),
    }


def read(name: str, path: Path, mapper=None) -> dict:
    from verified_tts.errors import UserError
    from verified_tts.generators import GeneratorConfig
    from verified_tts.options import ProductionOptions
    from verified_tts.text.production import check_language, list_chapters, load_input

    record: dict = {"book": name, "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}
    try:
        loaded = load_input(path, ProductionOptions())
    except UserError as error:
        return {**record, "refused": str(error).replace(str(path), name)}
    chapters = list_chapters(loaded)
    try:
        check_language(loaded.book, GeneratorConfig(), name)
        language_check = "the default voice speaks it"
    except UserError as error:
        language_check = str(error)
    book_entries = [e for e in (loaded.lexicon.entries if loaded.lexicon else ()) if e.source]
    if mapper is not None and any(s.phonemes for s in loaded.book.segments):
        record["piper_phonemes"] = piper_placement(loaded, mapper)
    return {
        **record,
        "title": loaded.book.title,
        "language": loaded.book.language,
        "language_check": language_check,
        "toc_depth": loaded.toc_depth,
        "toc_depths": list(loaded.toc_depths),
        "chapter_count": len(chapters),
        "words": sum(c.words for c in chapters),
        "characters": sum(len(s.text) for c in loaded.chapters for s in c.segments),
        "utterances": sum(c.utterances for c in chapters),
        "untitled_chapters": sum(not c.title for c in chapters),
        "chapters": [c.as_dict() for c in chapters[:LISTED]],
        "skipped_lines": len(loaded.skipped),
        "skipped": list(loaded.skipped[:LISTED]),
        "book_lexicon_entries": len(book_entries),
        "segments_with_book_phonemes": sum(bool(s.phonemes) for s in loaded.book.segments),
        "warnings": list(loaded.warnings),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--piper", action="store_true", help="Splice book phonemes as Piper does.")
    parser.add_argument(
        "--output", type=Path, default=ROOT / "benchmarks/results/epub_samples.json"
    )
    args = parser.parse_args()
    mapper = None
    if args.piper:
        from verified_tts.generators.piper import load_voice

        mapper = load_voice(None, threads=1).mapper
    with tempfile.TemporaryDirectory() as work:
        results = [read(name, path, mapper) for name, path in books(args.folders, Path(work))]
    for r in results:
        if "refused" in r:
            print(f"{r['book']:50} refused: {r['refused'][:90]}")
        else:
            print(
                f"{r['book']:50} {r['language'] or '-':6} depth {r['toc_depth']} "
                f"{r['chapter_count']:4} chapters {r['words']:7} words, {r['skipped_lines']} "
                f"left out, {len(r['warnings'])} warnings"
            )
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(
        json.dumps({"books": results}, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
