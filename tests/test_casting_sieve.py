"""The casting sieve on small texts: explicit tags in every order, addressees, turn-taking,
continued speech, the first-person narrator and an unnamed boatman, ``cast --json`` offsets, and
the boatman's lines cast in a voice other than the narrator's."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.conftest import CLI
from verified_tts.cast import apply_cast, find_cast
from verified_tts.casting.mentions import mentions, names_no_one
from verified_tts.casting.quotes import scan_text
from verified_tts.casting.report import cast_report
from verified_tts.casting.sieve import attribute
from verified_tts.casting.tags import speech_tag
from verified_tts.text.book import parse_book
from verified_tts.text.plaintext import load_plaintext
from verified_tts.voices import catalogue

CHAPTER = Path(__file__).parent / "data" / "first_person_boatman.txt"

TAGS = """Emma Woodhouse walked with Mr. Weston and Harriet Smith. Emma was glad, and she smiled.
Mr. Weston laughed, and he bowed. Harriet Smith blushed, and she curtsied. For Emma Woodhouse
and Harriet Smith it was the first walk of the spring.

"It is a fine day," said Emma.

"A very fine day," Mr. Weston said.

"Shall we walk on?" cried Harriet.

"By all means," said he, "if you are not tired."

"Not in the least, Mr. Weston."

"Then we go."

"Oh, Emma, look at the river!"

"I see it, Harriet."

"Dear Emma, it is lovely. And the hills beyond it, and the
"""

CONTINUED = (
    TAGS
    + """

"church on the hill."

Mr. Weston walked on alone, and he whistled.
"""
)


TWO = """In the garden sat George Emerson, reading. It was the first time that Lucy and George had
met since the spring, and Lucy knew it; she was glad. George knew it too, and he was glad. Lucy
had come from Windy Corner; at Windy Corner they were all at tea, and the road to Windy Corner
was long.

"You are early," said George.

"I walked."

"All the way?"

"All the way from the church."

George nodded.

"Then you must be tired."

"Not at all," said Lucy.
"""

THREE = (
    TWO
    + """
Mr. Beebe came out of the house.

"Tea," said Mr. Beebe.
"""
)


@pytest.fixture(scope="module")
def boatman() -> dict:
    return cast_report(CHAPTER.read_text(encoding="utf-8"))


def _speakers(report: dict, text: str) -> list[tuple[str, str | None]]:
    return [(text[q["start"] : q["end"]][:18], q["speaker"]) for q in report["quotes"]]


def test_tags_in_every_order_addressees_turns_and_continued_speech():
    report = cast_report(CONTINUED, threshold=0.0)  # every guess, however unsure
    said = [q["speaker"] for q in report["quotes"]]
    emma, weston, harriet = "Emma Woodhouse", "Mr. Weston", "Harriet Smith"
    # "said Emma", "Mr. Weston said", "cried Harriet", "said he" (the one man talking)
    assert said[:5] == [emma, weston, harriet, weston, weston]
    # "Not in the least, Mr. Weston." is addressed to him, so it is not his: Harriet answers
    assert said[5] == harriet
    assert "addressed" in report["quotes"][6]["why"] or "turn" in report["quotes"][6]["why"]
    # "Oh, Emma, look" names Emma, who answers "I see it, Harriet", whom Harriet answers
    assert said[7:] == [harriet, emma, harriet, harriet]
    assert "goes on" in report["quotes"][-1]["why"]  # the speech over two paragraphs
    names = {c["name"]: c for c in report["characters"]}
    assert "Emma" in names[emma]["aliases"] and names[emma]["gender"] == "female"
    assert names[weston]["gender"] == "male"
    for quote in report["quotes"]:
        assert 0 <= quote["confidence"] <= 1 and quote["why"]
        assert CONTINUED[quote["start"] : quote["end"]] == quote["text"]


def test_a_guess_below_the_threshold_goes_to_the_dialogue_voice():
    sure = cast_report(TAGS, threshold=0.0)["quotes"]
    strict = cast_report(TAGS, threshold=0.99)["quotes"]
    assert all(q["speaker"] for q in sure)
    assert all(q["speaker"] is None for q in strict)
    assert all(q["guess"] == s["speaker"] for q, s in zip(strict, sure, strict=True))


def test_the_narrator_and_the_unnamed_boatman_are_two_speakers(boatman):
    text = CHAPTER.read_text(encoding="utf-8")
    said = _speakers(boatman, text)
    narrator = {0, 2, 4, 7, 9}  # "said I", untagged turns, "I asked", "I said"
    for index, (quote, who) in enumerate(said):
        if index in narrator:
            assert who == "the narrator", (quote, who)
    others = {who for index, (_, who) in enumerate(said) if index not in narrator}
    assert len(others) == 1 and None not in others and "the narrator" not in others
    boat = others.pop()
    kinds = {c["name"]: c for c in boatman["characters"]}
    assert kinds["the narrator"]["kind"] == "narrator"
    assert kinds[boat]["kind"] == "described" and kinds[boat]["gender"] == "male"
    assert len(boatman["characters"]) == 2


def test_cast_json_prints_quotes_with_offsets_into_the_decoded_text(tmp_path):
    done = subprocess.run(
        [*CLI, "cast", str(CHAPTER), "--json"], capture_output=True, text=True, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    text = CHAPTER.read_bytes().decode("utf-8-sig")
    assert report["quotes"] and not list(tmp_path.iterdir())  # nothing written
    for quote in report["quotes"]:
        assert text[quote["start"] : quote["end"]] == quote["text"]
        assert set(quote) >= {"start", "end", "text", "speaker", "confidence", "why"}
    assert {c["name"] for c in report["characters"]} >= {"the narrator"}


def test_the_boatman_is_cast_in_a_voice_other_than_the_narrators():
    book = load_plaintext(CHAPTER, dialogue=True).book
    narrator = "espeak:en-us"
    cast, characters = find_cast(book, narrator=narrator, voices=catalogue())
    voiced = apply_cast(book, cast)
    voices = {}
    for segment in voiced.segments:
        if segment.kind == "dialogue":
            voices.setdefault(segment.speaker, set()).add(segment.voice or narrator)
    assert voices["the narrator"] == {narrator}
    boat = [name for name in voices if name != "the narrator"]
    assert len(boat) == 1 and len(voices[boat[0]]) == 1 and narrator not in voices[boat[0]]


def test_turns_run_between_tagged_lines_through_a_beat_of_narration_and_say_how_sure():
    two = cast_report(TWO, threshold=0.0)
    said = [(q["speaker"], q["confidence"]) for q in two["quotes"]]
    # "George nodded." does not end the scene: the untagged lines alternate between the two
    # tagged ones, and a turn between two people whose tags agree is a sure one
    assert [who for who, _ in said] == ["George", "Lucy", "George", "Lucy", "George", "Lucy"]
    assert all(sure >= 0.8 for _, sure in said)
    # a third person heard nearby makes the same turns less sure
    three = cast_report(THREE, threshold=0.0)["quotes"]
    assert [q["speaker"] for q in three[:6]] == [who for who, _ in said]
    assert all(q["confidence"] < sure for q, (_, sure) in zip(three[1:5], said[1:5], strict=True))
    # Windy Corner follows "from" and "at": a place, not a character
    chapters = [[(p.text, p.quotes) for p in chapter] for chapter in scan_text(TWO)]
    people = attribute(chapters)[1]
    assert "George" in people.canonical and "Windy Corner" not in people.canonical


def test_characters_the_text_gives_no_gender_get_voices_of_their_own():
    book = parse_book(
        '# One\n\nThe Dodo stood on a stone, and the Mouse sat beside the Dodo.\n\n"Everybody has '
        'won," said the Dodo.\n\n"And who is to give the prizes?" asked the Mouse.\n',
        dialogue=True,
    )
    narrator = "piper:en_US-joe-medium"
    cast, characters = find_cast(book, narrator=narrator, voices=catalogue())
    assert {c.name: c.gender for c in characters} == {"the Dodo": None, "the Mouse": None}
    given = set(cast.characters.values())
    assert len(given) == 2 and narrator not in given and cast.dialogue not in given


def test_a_tag_keeps_the_title_of_a_surname_several_characters_share():
    text = (
        "Mrs. Honeychurch sat with her son Freddy Honeychurch and her daughter Lucy Honeychurch. "
        "Mrs. Honeychurch was tired, and Freddy was late.\n\n"
        'Then Mrs. Honeychurch opened her door and said: "Lucy, what a noise you are making!"\n'
    )
    (quote,) = cast_report(text)["quotes"]
    assert quote["speaker"] == "Mrs. Honeychurch", quote


def _last_quote(text: str) -> dict:
    """The last quote of ``text`` as ``cast --json`` reports it, every guess given."""
    return cast_report(text, threshold=0.0)["quotes"][-1]


def _character(report: dict, name: str) -> dict:
    return next(c for c in report["characters"] if name == c["name"] or name in c["aliases"])


def test_a_title_with_a_first_name_or_a_surname_is_the_fuller_name_it_is_short_for():
    text = (
        "Mrs. Rachel Lynde lived down the hill. Everybody knew Mrs. Rachel Lynde, and Marilla "
        "knew her best. Marilla was at home. Marilla was tired.\n\n"
        '"Good morning," said Mrs. Rachel.\n\n'
        '"Good morning," said Marilla.\n\n'
        '"Fine weather," said Mrs. Lynde.\n'
    )
    report = cast_report(text)
    speakers = [q["speaker"] for q in report["quotes"]]
    assert speakers == ["Mrs. Rachel Lynde", "Marilla", "Mrs. Rachel Lynde"], speakers
    lynde = _character(report, "Mrs. Rachel Lynde")
    assert {"Mrs. Rachel", "Mrs. Lynde"} <= set(lynde["aliases"]) and lynde["why"]


def test_miss_and_a_surname_is_the_one_so_called_in_full_not_a_girl_of_that_surname():
    text = (
        "Diana Barry came with Miss Josephine Barry. Then Diana Barry laughed, and Miss "
        "Josephine Barry smiled. Both Diana and Miss Barry were glad, and Diana sat down.\n\n"
        '"Sit down," said Miss Barry.\n\n'
        '"Thank you," said Diana.\n'
    )
    speakers = [q["speaker"] for q in cast_report(text)["quotes"]]
    assert speakers == ["Miss Josephine Barry", "Diana Barry"], speakers


def test_a_surname_form_named_far_more_than_the_fuller_one_is_someone_else():
    text = (
        "Miss Bates talked. Miss Bates talked on, and Miss Bates talked more. Miss Bates was "
        "kind. Miss Bates was poor. Emma was bored; Miss Jane Bates and Miss Jane Bates again "
        "were named in the old letters. Miss Bates smiled.\n\n"
        '"Such a day," said Miss Bates.\n'
    )
    (quote,) = cast_report(text)["quotes"]
    assert quote["speaker"] == "Miss Bates", quote


def test_a_full_name_written_once_joins_a_first_name_and_a_titled_surname():
    text = (
        "Lucy sat with Charlotte and Miss Bartlett. Lucy was young. Then Charlotte was tired, "
        "and she yawned. Then Lucy laughed, and Miss Bartlett sighed. Then Charlotte was old, "
        "and she was wise.\n\n"
        '"One never knows which way Charlotte Bartlett will turn," said Lucy.\n\n'
        '"Indeed," said Miss Bartlett.\n\n'
        '"Indeed," said Charlotte.\n'
    )
    speakers = [q["speaker"] for q in cast_report(text)["quotes"]]
    assert speakers[1] == speakers[2] == "Charlotte Bartlett", speakers
    assert "Miss Bartlett" in _character(cast_report(text), "Charlotte Bartlett")["aliases"]


def test_a_full_name_in_a_chapter_heading_after_a_title_joins_the_two_short_names():
    text = (
        "Chapter I: Miss Clara Pryor Walks Out with Tom\n\n"
        "Clara sat with Tom and Miss Pryor. Clara was young, and she smiled. Then Tom was "
        "tired, and he yawned. Then Clara laughed, and she sang. Miss Pryor sighed. Then Tom "
        "was old, and he was wise.\n\n"
        '"Shall we go?" said Clara.\n\n'
        '"Indeed," said Tom.\n\n'
        '"Then let us," said Miss Pryor.\n'
    )
    speakers = [q["speaker"] for q in cast_report(text)["quotes"]]
    assert speakers[0] == speakers[2] == "Clara Pryor", speakers
    # the book reader (render --cast) knows the same characters from the Markdown heading
    book = parse_book("# " + text, dialogue=True)
    read = [s.speaker for c in book.chapters for s in c.segments if s.kind == "dialogue"]
    assert read[0] == read[2] == "Clara Pryor", read


def test_a_capitalised_description_without_its_article_is_the_same_character():
    text = (
        "Alice sat with the Hatter and the March Hare. Alice was sleepy, and the Hatter was "
        "rude.\n\n"
        '"Your hair wants cutting," said the Hatter.\n\n'
        '"No room!" said the March Hare.\n\n'
        '"Have some wine," Hatter said.\n'
    )
    report = cast_report(text)
    speakers = [q["speaker"] for q in report["quotes"]]
    assert speakers == ["the Hatter", "the March Hare", "the Hatter"], speakers
    assert "March Hare" in _character(report, "the March Hare")["aliases"]


def test_a_label_in_capitals_is_not_a_character():
    text = (
        "Then Alice was small, and she was curious. Then Alice found a bottle, and she looked "
        "at it.\n\n"
        "It said DRINK ME, and she read it. It said DRINK ME, and she drank.\n\n"
        'She tasted it, and she said, "What a curious feeling!"\n'
    )
    (quote,) = cast_report(text)["quotes"]
    assert quote["speaker"] == "Alice", quote


def test_a_possessive_kin_tag_is_a_turn_of_its_gender_not_a_character_of_its_own():
    text = (
        "Mrs. Honeychurch sat with Lucy and Mr. Beebe. Mrs. Honeychurch was tired, and she "
        "yawned. Mr. Beebe was kind, and he smiled. Lucy was glad, and she laughed.\n\n"
        '"Tea?" said Mr. Beebe.\n\n'
        '"Yes, please," said Lucy.\n\n'
        '"Not for me," said her mother.\n'
    )
    report = cast_report(text, threshold=0.0)
    last = report["quotes"][-1]
    # "her mother" is a woman: not Mr. Beebe, whose turn the line would be without the tag,
    # and not a character called "her mother"
    assert last["speaker"] not in ("Mr. Beebe", "her mother"), last
    assert "her mother" in last["why"]
    assert all(c["name"] != "her mother" for c in report["characters"])


def test_a_description_is_the_character_the_narration_calls_by_its_adjective():
    text = (
        "Old Mr. Emerson came in with Lucy. Lucy was glad, and she smiled. Mr. Emerson sat "
        "down, and he looked at her; old Mr. Emerson was tired.\n\n"
        '"You are tired," said Lucy.\n\n'
        '"I am old," said the old man.\n\n'
        "The rain came on, and it fell on the roof of the pension for an hour. "
        "Then old Mr. Emerson stood up.\n\n"
        '"Good night," said the old man.\n'
    )
    report = cast_report(text, threshold=0.0)
    said = [q["speaker"] for q in report["quotes"]]
    assert said == ["Lucy", "Mr. Emerson", "Mr. Emerson"], report["quotes"]
    assert "old Mr. Emerson" in report["quotes"][1]["why"]
    emerson = next(c for c in report["characters"] if c["name"] == "Mr. Emerson")
    assert "the old man" in emerson["aliases"]


def _scene(number: int) -> str:
    return (
        f"Chapter {number}\n\nMr. Winterbourne walked in the garden with Daisy Miller. Daisy "
        "was gay, and she laughed; Mr. Winterbourne was grave, and he bowed.\n\n"
        '"What a garden!" said Daisy.\n\n'
        '"It is very fine," said the young man.\n\n'
    )


def test_a_description_is_the_one_person_of_its_gender_in_the_scene_at_its_tags():
    text = "".join(_scene(n) for n in range(1, 4))
    report = cast_report(text, threshold=0.0)
    said = [q["speaker"] for q in report["quotes"]]
    assert said == ["Daisy Miller", "Mr. Winterbourne"] * 3, report["quotes"]
    winterbourne = next(c for c in report["characters"] if c["name"] == "Mr. Winterbourne")
    assert "the young man" in winterbourne["aliases"]
    assert "at 3 of its 3 tags" in report["quotes"][1]["why"]
    # twice is not enough to link: each tag is read on its own
    twice = cast_report("".join(_scene(n) for n in range(1, 3)), threshold=0.0)
    winterbourne = next(c for c in twice["characters"] if c["name"] == "Mr. Winterbourne")
    assert "the young man" not in winterbourne["aliases"]
    assert "of its" not in twice["quotes"][1]["why"]


def test_a_pronoun_tag_is_the_person_named_in_the_latest_sentence_before_it():
    text = (
        "Mr. Winterbourne walked with Giovanelli and Daisy; the lady had sent Giovanelli and "
        "Daisy to him. Mr. Winterbourne was grave, and he bowed. Giovanelli was gay, and he "
        "laughed. Giovanelli was young, and he was handsome. Daisy was ill, and she coughed. "
        "Daisy was tired, and she sat down.\n\n"
        "Mr. Winterbourne turned away. Giovanelli was very pale. At last he said, "
        '"She was the most beautiful young lady I ever saw."\n'
    )
    (quote,) = cast_report(text, threshold=0.0)["quotes"]
    assert quote["speaker"] == "Giovanelli", quote
    assert "named just before" in quote["why"]


def test_an_answer_is_to_the_one_the_last_speaker_was_answering_not_the_next_one_to_come():
    text = (
        "Mr. Beebe sat with Lucy in the drawing-room; her brother Freddy was out, and Mr. Beebe "
        "had not seen Freddy. Mr. Beebe was kind, and he smiled. Lucy was tired, and she "
        "yawned. Freddy was in the garden, and he whistled.\n\n"
        '"Tea?" said Mr. Beebe.\n\n'
        '"Yes, please," said Lucy.\n\n'
        '"Milk?"\n\n'
        "The door banged, and a boy with muddy boots ran in from the garden.\n\n"
        '"Hullo," said Freddy.\n'
    )
    said = [q["speaker"] for q in cast_report(text, threshold=0.0)["quotes"]]
    # "Milk?" answers Lucy, who was answering Mr. Beebe; Freddy comes in after it
    assert said == ["Mr. Beebe", "Lucy", "Mr. Beebe", "Freddy"], said


def test_an_answer_three_lines_from_the_last_tag_between_two_people_is_committed():
    text = (
        "Emma walked with Harriet; it was the first walk for Harriet since the winter, and "
        "Emma was glad, and she smiled. Harriet was shy, and she blushed.\n\n"
        '"It is a fine day," said Emma.\n\n'
        '"A very fine day," said Harriet.\n\n'
        '"Shall we walk on?"\n\n'
        '"If you like."\n\n'
        '"Then we will."\n\n'
        '"Very well."\n'
    )
    quotes = cast_report(text)["quotes"]
    # two people, after the last tag: turns are right about 60% of the time on the development
    # novels, so the answer three lines on still gets a speaker at the default threshold
    assert [q["speaker"] for q in quotes[:5]] == ["Emma", "Harriet", "Emma", "Harriet", "Emma"]
    assert "turn-taking" in quotes[4]["why"], quotes[4]


@pytest.mark.parametrize(
    ("narration", "after", "tag"),
    [
        ("she was met by Mr. Allen, who, on hearing it, said, ", False, ("Mr. Allen", "said")),
        ("At this moment Five, who had been looking across the garden, called out ", False,
         ("Five", "called")),
        ("On which Seven looked up and said, ", False, ("Seven", "said")),
        ("after a minute's silence she heard Harriet say in a very serious tone, ", False,
         ("Harriet", "say")),
        ("it was broken by Thorpe's saying very abruptly, ", False, ("Thorpe", "saying")),
        ("She turned to George: ", False, ("She", "turned")),
        (" was uttered at the same moment by Catherine; and she ran", True,
         ("Catherine", "uttered")),
        (" he quavered; and Lucy saw an alteration in him.", True, ("he", "quavered")),
        (" observed the general to Eleanor.", True, ("the general", "observed")),
        (" She looked at the river.", True, None),
        (" said the unsympathetic Marilla.", True, ("Marilla", "said")),
        (" was his reply, but not in anger.", True, ("he", "reply")),
        # a narration that ends in a speech verb is said by the subject of its main clause
        ("and at last Clara rose with a sigh, and said: ", False, ("Clara", "said")),
        # a sentence-opening word is no name, alone or before one
        ("Thus the hour crept away, and at last Clara rose with a sigh, and said:", False,
         ("Clara", "said")),
        ("Nothing occurred until the pudding. Then Hartley said:", False, ("Hartley", "said")),
        ("But Tom immediately added, ", False, ("Tom", "added")),
        ("Her father replied:", False, ("Her father", "replied")),
        ("The Badger shook its head, and said, without looking up, ", False,
         ("the Badger", "said")),
        ("Very soon the Otter noticed Clara, and called out to her in a cross tone, ", False,
         ("the Otter", "called")),
        ("The Judge looked at the Grey Heron, who said in a low voice, ", False,
         ("the Grey Heron", "said")),
        ("And Frank was heard to say, ", False, ("Frank", "say")),
        ("she heard Mr. Pryor whisper to his wife, ", False, ("Mr. Pryor", "whisper")),
        ("At that moment Clara opened her door, and her voice said: ", False, ("she", "said")),
        ("before Hartley came running upstairs, calling out, ", False, ("Hartley", "calling")),
        ("a Presence who whispered to her heart: ", False, None),
        # a sentence that ends in a dash before the one that speaks ("together.--Emma took")
        ("He brought the letters to her, and they read them over together.--Clara took the "
         "opportunity of whispering:", False, ("Clara", "whispering")),
        # a possessive is not who spoke: the relation of the one named is
        (" answered Clara's mamma, smiling.", True, ("Clara's mother", "answered")),
        # "the voice of" someone is that one speaking; a voice alone is no one's yet
        (" exclaimed the voice of old Mr. Pryor, who had run up too.", True,
         ("Mr. Pryor", "exclaimed")),
        (" cried the voice of the ferryman.", True, ("the ferryman", "cried")),
        (" said the voice.", True, ("the voice", "said")),
    ],
)  # fmt: skip
def test_speech_tags_beside_a_quote(narration, after, tag):
    assert speech_tag(narration, after) == tag


def test_a_possessive_kin_tag_is_the_one_of_that_family_name():
    text = (
        "In the parlour sat Clara Hartley with Mr. Hartley and Mr. Pryor. Then Clara was gay, "
        "and she laughed. Mr. Hartley was old, and he coughed. Mr. Pryor was kind, and he "
        "smiled. The tea was poured by Clara Hartley.\n\n"
        '"It is cold," said Mr. Pryor.\n\n'
        '"Then sit by the fire," said Clara.\n\n'
        '"My dear, you will burn the toast," said her father.\n'
    )
    last = _last_quote(text)
    # her father: the man who shares Clara Hartley's family name, not Mr. Pryor
    assert last["speaker"] == "Mr. Hartley", last
    assert "family name" in last["why"]


def test_a_mother_is_a_mrs_of_that_name_not_the_daughter():
    text = (
        "Mrs. Dale sat with her daughter Rose Dale and Mr. Crewe. Mrs. Dale was tired, and she "
        "yawned. Rose Dale was glad, and she sang. Mr. Crewe was quiet, and he read. Rose was "
        "at the window.\n\n"
        '"Tea?" said Mr. Crewe.\n\n'
        '"Yes, please," said Rose.\n\n'
        '"Not for me," said her mother.\n'
    )
    last = _last_quote(text)
    assert last["speaker"] == "Mrs. Dale", last


def test_a_pronoun_tag_is_not_the_one_the_quote_calls_by_name():
    text = (
        "Mrs. Pryor came in with Clara. Then Clara was glad, and she smiled. Mrs. Pryor was "
        "tired, and she sat down.\n\n"
        "The room was dark, and a candle was lit by Clara.\n\n"
        '"Clara," said she, "this paper is worse than I expected."\n'
    )
    quotes = cast_report(text, threshold=0.0)["quotes"]
    # Clara is named in the narration just before, but the quote calls her: she did not say it
    assert [q["speaker"] for q in quotes] == ["Mrs. Pryor", "Mrs. Pryor"], quotes


def test_the_latter_is_the_last_of_two_people_the_narration_names():
    text = (
        "Clara and Mr. Hartley were in the shop. Clara was glad, and she smiled. Mr. Hartley "
        "was old, and he coughed. Mrs. Pryor was kind, and she laughed. Miss Lane was shy, and "
        "she blushed.\n\n"
        "Voices came to the door: Mrs. Pryor and Miss Lane met them there.\n\n"
        '"My dear Clara," said the latter, "do come and sit with us."\n'
    )
    quote = cast_report(text, threshold=0.0)["quotes"][0]
    assert quote["speaker"] == "Miss Lane", quote
    assert "latter of Mrs. Pryor and Miss Lane" in quote["why"]


def test_a_dialogue_paragraph_that_ends_in_a_speech_verb_hands_the_next_quote_on():
    text = (
        "Mr. Hartley sat with Clara and Mr. Pryor. Mr. Hartley was old, and he coughed. Clara "
        "was young, and she laughed. Mr. Pryor was kind, and he smiled.\n\n"
        '"Ah!" said Mr. Hartley, shaking his head. After an interval, however, he began with,'
        "\n\n"
        '"I shall always be sorry that you went to the sea."\n'
    )
    quotes = cast_report(text, threshold=0.0)["quotes"]
    assert [q["speaker"] for q in quotes] == ["Mr. Hartley", "Mr. Hartley"], quotes


def test_a_name_just_inside_the_opening_mark_is_whom_the_quote_addresses():
    text = (
        "Mrs. Pryor sat with Clara and Mr. Hartley. Then Clara was young, and she laughed. Mrs. "
        "Pryor was kind, and she smiled. Mr. Hartley was old, and he coughed.\n\n"
        '"Mrs. Pryor!" cried Clara. "Have they given you the school?"\n\n'
        '"They have. The trustees met last night."\n'
    )
    quotes = cast_report(text, threshold=0.0)["quotes"]
    assert quotes[0]["addressees"] == ["Mrs. Pryor"]
    assert quotes[-1]["speaker"] == "Mrs. Pryor", quotes[-1]


def test_a_name_that_echoes_the_line_before_calls_no_one():
    text = (
        "Mrs. Pryor sat with Clara and Mr. Hartley. Then Clara was young, and she laughed. Mrs. "
        "Pryor was kind, and she smiled. Mr. Hartley was old, and he coughed.\n\n"
        '"Mr. Hartley has gone to town," said Clara.\n\n'
        '"Mr. Hartley?"\n\n'
        '"Yes, Mr. Hartley, and by the early coach."\n'
    )
    quotes = cast_report(text, threshold=0.0)["quotes"]
    assert "addressees" not in quotes[1], quotes[1]  # an echo of the name, not a call
    assert quotes[2]["addressees"] == ["Mr. Hartley"]  # more than the name: a call


def test_the_one_addressed_need_not_answer_after_narration_between():
    text = (
        "Mr. Hartley sat with Clara and Mr. Pryor. Mr. Hartley was old, and he coughed. Clara "
        "was young, and she laughed. Mr. Pryor was kind, and he smiled.\n\n"
        '"Tea?" said Clara.\n\n'
        '"I have been thinking, Mr. Pryor," said Mr. Hartley, "that we should go."\n\n'
        "Mr. Pryor read the letter in silence, and laid it down.\n\n"
        '"I cannot see the point of it myself."\n'
    )
    last = _last_quote(text)
    assert "addressed by name" not in last["why"], last


def test_an_answer_to_sir_given_to_a_woman_is_less_sure():
    text = (
        "Clara walked with Mr. Pryor; Clara was young, and she laughed. Mr. Pryor was kind, "
        "and he smiled. Then Clara was tired, and she sat down.\n\n"
        '"It is a fine day," said Clara.\n\n'
        '"A very fine day," said Mr. Pryor.\n\n'
        '"Shall we walk on?"\n\n'
    )
    # the line before calls its listener "sir", and the turns give the answer to Clara
    plain = _last_quote(text)
    called = cast_report(text.replace("A very fine day,", "A very fine day, sir,"), threshold=0)
    assert plain["speaker"] == called["quotes"][-1]["speaker"] == "Clara"
    assert called["quotes"][-1]["confidence"] < plain["confidence"]
    assert "'sir'" in called["quotes"][-1]["why"]


def test_accented_and_hyphenated_names_are_characters():
    text = """At the gate stood Léonce, and with him Zoë and Mary-Jane. Then Zoë smiled at
Léonce, and Mary-Jane laughed.

"Good evening," said Léonce.

"Good evening," said Zoë.

"You are late," said Mary-Jane.
"""
    said = [q["speaker"] for q in cast_report(text)["quotes"]]
    assert said == ["Léonce", "Zoë", "Mary-Jane"]


def test_the_girl_in_a_tag_with_two_women_in_sight_is_whose_turn_it_is():
    text = """In the parlour sat Clara and Bella with Mr. Dunn. Then Clara yawned, for she was
tired. Then Bella frowned, for she was cross. Then Mr. Dunn laughed, for he was merry.

"Shall we walk?" asked Mr. Dunn.

"Not now," said Bella.

"Nor I," said Clara.

"Then later?" said Mr. Dunn.

"Perhaps," the girl said.
"""
    quote = cast_report(text)["quotes"][-1]
    # not a stranger called "the girl": a woman's tag, and it is Clara's turn
    assert quote["speaker"] == "Clara"
    assert quote["why"] == "'she' with a speech verb: Clara, whose turn it is"


def test_a_line_no_tag_or_turn_tells_is_the_one_the_narration_before_is_about():
    text = """The rain had stopped when Clara Vane came home. At the door Clara shook her umbrella.

Clara went into the hall and looked about her.

"What a grey morning it is!"
"""
    quote = cast_report(text)["quotes"][0]
    assert quote["speaker"] == "Clara"
    assert quote["confidence"] == 0.58 and "narration just before" in quote["why"]


def test_a_turn_from_a_less_sure_anchor_loses_half_the_difference():
    from verified_tts.casting.turns import Guess, Line, fill_turns

    def turn(anchor: float) -> float:
        lines = [
            Line(Guess("Anne", "tag", 0.95, tagged=True), 0),
            Line(Guess("Tom", "tag", anchor, tagged=True), 0),
            Line(Guess(None, "", 0.0), 0),
        ]
        return fill_turns(lines, lambda who: None)[2].confidence

    # two people after the last tag, an answer: 64% right from a tag; from an anchor of 0.57
    # (four tenths less sure than a tag) a fifth less: 0.64 * 0.8
    assert turn(0.95) == 0.64
    assert turn(0.57) == round(0.64 * 0.8, 3)


def test_an_exclamation_that_opens_a_quote_after_a_tag_is_not_a_name():
    from verified_tts.text.names import proper_names

    # 'hastily replied, "Indeed! ..."': capitalised in mid-sentence, as a name is, more than once
    texts = [
        'Miss Tilney hastily replied, "Indeed! And of what nature?"',
        'Henry said, "Indeed! Have you yet honoured the Upper Rooms?" And Catherine said, '
        '"Nay, I have not." Isabella cried, "Alas! Pray tell me."',
        'Mr. Allen said, "Nay, Alas, Pray, Goodness, Nobody knows."',
    ]
    names = proper_names(texts)
    assert {"Tilney", "Henry", "Catherine", "Isabella", "Allen"} >= names - {"Miss"}, names
    assert not {"Indeed", "Nay", "Alas", "Pray", "Goodness", "Nobody"} & names


def test_a_long_narration_before_a_quote_does_not_end_the_scene_after_it():
    weather = "The rain fell on the roofs of the town and the lanes ran with water. " * 12
    text = (
        "Mrs. Pryor sat with Clara and Mr. Hartley. Then Clara was young, and she laughed. Mrs. "
        "Pryor was kind, and she smiled. Mr. Hartley was old, and he coughed.\n\n"
        f'{weather}At last Clara looked up from her work. "It is very cold," said Clara.\n\n'
        '"Very cold indeed."\n\n'
        '"Shall we go in to tea?"\n'
    )
    quotes = cast_report(text, threshold=0.0)["quotes"]
    assert [q["speaker"] for q in quotes] == ["Clara", "Mr. Hartley", "Clara"], quotes
    assert "turn-taking" in quotes[1]["why"], quotes[1]


def test_a_question_reported_in_the_narration_is_a_turn_the_next_line_answers():
    text = (
        "Mrs. Pryor sat with Clara and Mr. Hartley. Then Clara was young, and she laughed. Mrs. "
        "Pryor was kind, and she smiled. Mr. Hartley was old, and he coughed.\n\n"
        '"Where have you been all day?" said Clara.\n\n'
        '"In town," said Mr. Hartley.\n\n'
        "Clara asked what he had done there.\n\n"
        '"I bought a horse, a grey one."\n'
    )
    quotes = cast_report(text, threshold=0.0)["quotes"]
    assert quotes[-1]["speaker"] == "Mr. Hartley", quotes[-1]
    assert len(quotes) == 3  # the narration is a turn, not a quote


def test_a_later_quote_with_a_tag_of_its_own_is_that_speakers_and_their_turn():
    text = (
        "Mrs. Pryor sat with Clara and Mr. Hartley. Then Clara was young, and she laughed. Mrs. "
        "Pryor was kind, and she smiled. Mr. Hartley was old, and he coughed.\n\n"
        '"What has happened here?" asked Mr. Hartley. "We were reading," explained Clara.\n\n'
        '"Reading what, pray?"\n'
    )
    quotes = cast_report(text, threshold=0.0)["quotes"]
    assert [q["speaker"] for q in quotes] == ["Mr. Hartley", "Clara", "Mr. Hartley"], quotes
    assert quotes[1]["why"] == "'Clara explained' tags this quote"


def test_a_relation_of_a_named_character_is_the_one_of_that_family():
    text = (
        "Mrs. Pryor sat with Clara Pryor and Mr. Hartley. Then Clara was young, and she laughed. "
        "Mrs. Pryor was kind, and she smiled. Mr. Hartley was old, and he coughed.\n\n"
        '"Shall we walk?" said Mr. Hartley.\n\n'
        '"Not to-day," answered Clara\'s mamma.\n'
    )
    last = _last_quote(text)
    assert last["speaker"] == "Mrs. Pryor", last


def test_a_lady_in_a_tag_is_not_the_one_titled_lady():
    text = (
        "Lady Pryor sat with Clara and Mr. Hartley. Then Clara was young, and she laughed. Lady "
        "Pryor was proud, and she frowned. Mr. Hartley was old, and he coughed.\n\n"
        '"Is it far to the church?" said Mr. Hartley.\n\n'
        '"Not very far," said the little old lady by the door.\n'
    )
    last = _last_quote(text)
    # "lady" names no rank: the tag is a woman's, whom the turns may tell, not Lady Pryor's title
    assert "so titled" not in last["why"], last


def test_sir_or_lord_before_a_name_is_a_title_not_a_word_that_names_no_one():
    text = (
        "Sir Roger Blunt sat with Clara and Mrs. Pryor. Then Clara was young, and she laughed. "
        "Mrs. Pryor was kind, and she smiled. Sir Roger was old, and he coughed.\n\n"
        '"Shall we walk?" said Clara.\n\n'
        'Sir Roger got up from his chair, went to the window and said, "It rains."\n'
    )
    last = _last_quote(text)
    # "Sir" alone names no one ("Sir, I thank you"), but "Sir Roger ... and said" is Sir Roger's
    assert last["speaker"] == "Sir Roger Blunt" and "tags the quote" in last["why"], last
    assert names_no_one("Sir") and names_no_one("Then Emma") and not names_no_one("Lord Hale")
    # an opener that is no title still falls away: "Poor Harriet" is Harriet
    assert mentions("Poor Harriet wept.", frozenset({"Harriet"})) == ["Harriet"]


def test_a_name_that_shares_its_verb_with_another_is_not_who_speaks():
    # "where she and Bella were sitting": Bella shares "were" with "she"; Tom comes in and speaks
    before = "Tom, after a while, came into the room where she and Bella were sitting, and said,"
    assert speech_tag(before, False) == ("Tom", "said")


_THREE = (
    "Mr. Hartley sat with Clara and Mr. Pryor. Mr. Hartley was old, and he coughed. Clara was "
    "young, and she laughed. Mr. Pryor was kind, and he smiled.\n\n"
)


def test_an_answer_to_an_answer_goes_back_to_the_one_it_answered_whoever_speaks_next():
    text = _THREE + (
        '"It is a fine day," said Clara.\n\n'
        '"A very fine day," said Mr. Pryor.\n\n'
        '"Shall we walk on?"\n\n'
        '"If you like."\n\n'
        '"Good morning," said Mr. Hartley.\n'
    )
    said = [q["speaker"] for q in cast_report(text, threshold=0.0)["quotes"]]
    # Mr. Pryor answered Clara, so the line after his is hers, though Mr. Hartley comes in later
    assert said[:4] == ["Clara", "Mr. Pryor", "Clara", "Mr. Pryor"], said


@pytest.mark.parametrize(
    "line", ['"Clara always likes the spring."', '"Clara, you always like the spring."']
)
def test_a_line_that_names_the_one_whose_turn_it_is_is_the_nearest_other_speakers(line):
    text = _THREE + (
        '"Good morning," said Mr. Hartley.\n\n'
        '"It is a fine day," said Clara.\n\n'
        '"A very fine day," said Mr. Pryor.\n\n' + line + "\n"
    )
    last = _last_quote(text)
    # the turns give it to Clara, whom it names; Mr. Pryor said the line before it
    assert last["speaker"] == "Mr. Hartley", last
    assert "names Clara" in last["why"], last
