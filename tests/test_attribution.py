"""Rule-based attribution: each rule on a small exchange, with its reason, and the fallback."""

from __future__ import annotations

from verified_tts.text.attribution import attribute_book
from verified_tts.text.dialogue import scan_paragraph
from verified_tts.text.names import character_genders, proper_names

STORY = [
    "Anne and Tom walked to the mill, and Anne carried the basket while Tom ran ahead.",
    '"It is late," said Anne.',
    '"Not yet," Tom answered. "The bell has not rung."',
    '"It rang an hour ago."',
    '"Then we must hurry."',
    "Anne looked at the sky; she frowned at the clouds.",
    '"Rain," she said.',
    "Tom turned round, and he laughed.",
    '"Only a shower," he said.',
    '"Who is there?" called a voice from the dark.',
]


def _chapter(paragraphs: list[str]) -> list:
    chapter, after = [], False
    for text in paragraphs:
        quotes = scan_paragraph(text, after_open=after)
        after = quotes.open_at_end
        chapter.append((text, quotes))
    return chapter


def test_each_rule_names_the_speaker_and_says_why():
    found = attribute_book([_chapter(STORY)])[0]
    guesses = [(a.speaker, a.reason) if a else None for a in found]
    assert guesses[0] is None  # narration
    assert guesses[1] == ("Anne", "'Anne' with a speech verb next to the quote")
    assert guesses[2] == ("Tom", "'Tom' with a speech verb next to the quote")
    assert guesses[3][0] == "Anne" and guesses[3][1].startswith("alternation")
    assert guesses[4][0] == "Tom" and guesses[4][1].startswith("alternation")
    assert guesses[6][0] == "Anne" and "'she'" in guesses[6][1]
    assert guesses[8][0] == "Tom" and "'he'" in guesses[8][1]
    # nobody named, no pronoun, no exchange just before: the default dialogue voice
    assert guesses[9][0] is None and guesses[9][1]


def test_a_speech_over_paragraphs_keeps_its_speaker():
    chapter = _chapter(
        [
            "Anne saw Tom there, and Anne spoke to Tom.",
            '"Listen," said Anne, "to this.',
            '"It goes on."',
        ]
    )
    found = attribute_book([chapter])[0]
    assert found[2].speaker == "Anne" and "goes on" in found[2].reason


def test_a_capital_word_that_is_no_name_is_not_a_speaker():
    names = proper_names(STORY)
    assert {"Anne", "Tom"} <= names and "Then" not in names
    found = attribute_book([_chapter(['"Go," Then said.', "The end."])])[0]
    assert found[0].speaker is None


def test_gender_comes_from_the_pronouns_near_a_name():
    genders = character_genders([_chapter(STORY)], proper_names(STORY))
    assert genders == {"Anne": "female", "Tom": "male"}


def test_a_character_has_one_name_however_the_tags_call_them():
    paragraphs = [
        "Dermott McDermott came in, and he bowed; Dermott McDermott always bowed.",
        "Mrs. Ravenel looked up, and she smiled at Frank Ravenel; she loved Frank Ravenel.",
        '"Good evening," said Dermott.',
        "The fire burned low.",
        '"You are late," said Mrs. Ravenel.',
        "The clock struck.",
        '"I came by the river," McDermott answered.',
        "Frank Ravenel turned, and he frowned.",
        '"Late again," said Ravenel.',
    ]
    found = [a for a in attribute_book([_chapter(paragraphs)])[0] if a]
    speakers = [a.speaker for a in found]
    assert speakers[0] == speakers[2] == "Dermott McDermott"
    assert "Dermott is Dermott McDermott" in found[0].reason
    assert speakers[1] == "Mrs. Ravenel"  # a title that disagrees keeps her apart from Frank
    # Ravenel could be Mrs. Ravenel or Frank Ravenel: it stays as the text has it
    assert speakers[3] == "Ravenel"
