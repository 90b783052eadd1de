"""Tests for text normalisation into spoken words."""

from __future__ import annotations

import pytest

from verified_tts.text.normalize import normalize_text, roman_to_int, spell_number, spell_year


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # cardinals, separators, decimals, negatives
        ("I have 3 cats.", "I have three cats."),
        ("1,234 people", "one thousand two hundred and thirty-four people"),
        ("It is 3.5 long", "It is three point five long"),
        ("pi is 3.14", "pi is three point one four"),
        ("It was -5 outside", "It was minus five outside"),
        ("Agent 007", "Agent zero zero seven"),
        ("COVID-19", "COVID-nineteen"),
        # ordinals
        ("the 21st day", "the twenty-first day"),
        ("1st, 2nd, 3rd and 4th", "first, second, third and fourth"),
        # years and decades
        ("in 1869.", "in eighteen sixty-nine."),
        ("in 2005", "in two thousand five"),
        ("in 1905", "in nineteen oh five"),
        ("in 1900", "in nineteen hundred"),
        ("in 2024", "in twenty twenty-four"),
        ("the 1900s", "the nineteen hundreds"),
        ("the 1960s", "the nineteen sixties"),
        ("the '60s", "the sixties"),
        ("from 1914–1918", "from nineteen fourteen to nineteen eighteen"),
        # currency
        ("$5", "five dollars"),
        ("$1", "one dollar"),
        ("$3.50", "three dollars and fifty cents"),
        ("$1.01", "one dollar and one cent"),
        ("$0.99", "ninety-nine cents"),
        ("$1,000", "one thousand dollars"),
        ("$2.5 million", "two point five million dollars"),
        ("£10", "ten pounds"),
        ("£2.05", "two pounds and five pence"),
        ("€20", "twenty euros"),
        ("¥500", "five hundred yen"),
        # percentages, degrees, fractions
        ("50% off", "fifty percent off"),
        ("12.5 %", "twelve point five percent"),
        ("-3° outside", "minus three degrees outside"),
        ("40°C in the shade", "forty degrees Celsius in the shade"),
        ("350 °F.", "three hundred and fifty degrees Fahrenheit."),
        # ranges, telephone numbers, sections, approximations
        ("pages 120-135.", "pages one hundred and twenty to one hundred and thirty-five."),
        ("the war of 1914-1918", "the war of nineteen fourteen to nineteen eighteen"),
        ("won 3-2", "won three-two"),  # the second number smaller: as written
        ("call 555-1234.", "call five five five, one two three four."),
        ("on 2024-05-12 we met", "on May twelfth, twenty twenty-four we met"),
        ("2024-13-40", "twenty twenty-four-thirteen-forty"),  # no date: as written
        ("see §5 and §§ 3-4", "see section five and sections three to four"),
        ("~3 miles", "about three miles"),
        ("1/2 cup", "one half cup"),
        ("3/4 mile", "three quarters mile"),
        ("2/3 of it", "two thirds of it"),
        ("1 1/2 hours", "one and a half hours"),
        ("2½ miles", "two and a half miles"),
        ("5/8 inch", "five eighths inch"),
        # times
        ("At 3:30 pm we left.", "At three thirty p m we left."),
        ("at 3:30 p.m.", "at three thirty p m."),
        ("10:05", "ten oh five"),
        ("It was 10:00.", "It was ten o'clock."),
        ("at 5 p.m.", "at five p m."),
        ("at 7am", "at seven a m"),
        # abbreviations
        ("Dr. Watson", "Doctor Watson"),
        ("Mr. and Mrs. Smith", "Mister and Missus Smith"),
        ("St. Paul's Cathedral", "Saint Paul's Cathedral"),
        ("went to St. Ives", "went to Saint Ives"),
        ("He lived on Baker St. in London.", "He lived on Baker Street in London."),
        ("at 42nd St.", "at forty-second Street."),
        ("on Mulholland Dr.", "on Mulholland Drive."),
        ("The Dr. said so", "The Doctor said so"),
        ("apples, e.g. red ones", "apples, for example red ones"),
        ("E.g. this", "For example this"),
        ("red, i.e. ripe", "red, that is ripe"),
        ("and so on, etc.", "and so on, et cetera."),
        ("cups, etc. and plates", "cups, et cetera and plates"),
        ("Kramer vs. Kramer", "Kramer versus Kramer"),
        ("No. 5 and no. 6", "Number five and number six"),
        ("room #12", "room number twelve"),
        ("Tom & Jerry", "Tom and Jerry"),
        # roman numerals
        ("Chapter IV", "Chapter four"),
        ("CHAPTER XLII", "CHAPTER forty-two"),
        ("World War II", "World War two"),
        ("Henry VIII's wives", "Henry the Eighth's wives"),
        ("Louis XIV", "Louis the Fourteenth"),
        ("IV.", "four."),
        ("II. The Fox", "two. The Fox"),
        # things that must be left alone
        ("Then I went home.", "Then I went home."),
        ("the book I read", "the book I read"),
        ("Malcolm X spoke", "Malcolm X spoke"),
        ("MP3 players", "MP3 players"),
        ("No numbers here.", "No numbers here."),
    ],
)
def test_normalize_text(text: str, expected: str) -> None:
    assert normalize_text(text) == expected


def test_whitespace_is_collapsed() -> None:
    assert normalize_text("  a \n  b\t c  ") == "a b c"


def test_long_numbers_have_no_commas() -> None:
    # num2words writes "one million, two hundred..."; a comma would make the TTS pause.
    spoken = normalize_text("1,234,567")
    assert "," not in spoken
    assert spoken.startswith("one million two hundred and thirty-four thousand")


@pytest.mark.parametrize(
    ("year", "words"),
    [
        (1066, "ten sixty-six"),
        (1869, "eighteen sixty-nine"),
        (1800, "eighteen hundred"),
        (1901, "nineteen oh one"),
        (2000, "two thousand"),
        (2009, "two thousand nine"),
        (2010, "twenty ten"),
    ],
)
def test_spell_year(year: int, words: str) -> None:
    assert spell_year(year) == words


def test_spell_number() -> None:
    assert spell_number("12", "05") == "twelve point zero five"
    assert spell_number("7", negative=True) == "minus seven"
    assert spell_number("1,000") == "one thousand"


@pytest.mark.parametrize(
    ("numeral", "value"),
    [("I", 1), ("IV", 4), ("ix", 9), ("XLII", 42), ("MCMLXIX", 1969), ("IIII", None), ("", None)],
)
def test_roman_to_int(numeral: str, value: int | None) -> None:
    assert roman_to_int(numeral) == value
