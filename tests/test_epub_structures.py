"""EPUBs as publishers make them: single-file books, verse in divs, nested and Standard Ebooks
tables of contents, a book's own PLS lexicon and ssml:ph, and a language no voice speaks."""

from __future__ import annotations

import json
import subprocess

import pytest
from conftest import CLI, ROOT
from epub_fixtures import build_epub, pls, toc_nav, xhtml

from verified_tts.errors import UserError
from verified_tts.generators import GeneratorConfig
from verified_tts.options import ProductionOptions
from verified_tts.text import epub_chapters
from verified_tts.text.epub import load_epub
from verified_tts.text.epub_pls import espeak_ipa, read_pls
from verified_tts.text.production import check_language, list_chapters, load_input


def _texts(chapter) -> list[str]:
    return [segment.text for segment in chapter.segments]


def _words(chapter) -> int:
    return sum(len(segment.text.split()) for segment in chapter.segments)


# --- one file: front, body and back matter, verse in divs, rear notes -------------------------

WASTE_LAND = """
<section epub:type="frontmatter" id="frontmatter">
  <section epub:type="titlepage" id="titlepage">
    <h1>The Waste Land</h1><div class="aut">T.S. Eliot</div>
    <p epub:type="dedication">For Ezra Pound</p>
  </section>
</section>
<section epub:type="bodymatter" id="bodymatter">
  <section id="ch1"><h2>I. THE BURIAL OF THE DEAD</h2>
    <div class="linegroup">
      <div>April is the cruellest month, breeding</div>
      <div>Lilacs out of the dead land, mixing</div>
      <div id="ln3">Memory and desire, stirring<a epub:type="noteref" href="#note-1">*</a></div>
      <div>Dull roots with spring rain.<span class="lnum">4</span></div>
    </div>
    <div class="linegroup">
      <div>Winter kept us warm, covering</div>
      <div>Earth in forgetful snow.</div>
    </div>
  </section>
  <section id="ch2"><h2>II. A GAME OF CHESS</h2>
    <div class="linegroup"><div>The Chair she sat in, like a burnished throne,</div>
      <div>Glowed on the marble.<a epub:type="noteref" href="#note-2">*</a></div></div>
  </section>
</section>
<section epub:type="backmatter" id="backmatter">
  <section epub:type="rearnotes" id="rearnotes"><h2>NOTES</h2>
    <div epub:type="rearnote" id="note-1"><p>Line 3. Cf. Ezekiel.</p></div>
    <div epub:type="rearnote" id="note-2"><p>Line 7. Cf. Antony and Cleopatra.</p></div>
  </section>
</section>
"""


def test_single_file_book_reads_its_body_and_says_what_it_left_out(tmp_path):
    path = build_epub(
        tmp_path / "wasteland.epub",
        [("content.xhtml", xhtml(WASTE_LAND))],
        [
            ("I. THE BURIAL OF THE DEAD", "content.xhtml#ch1"),
            ("II. A GAME OF CHESS", "content.xhtml#ch2"),
            ("NOTES", "content.xhtml#rearnotes"),
        ],
    )
    loaded = load_epub(path)
    book = loaded.book
    assert [c.title for c in book.chapters] == ["I. THE BURIAL OF THE DEAD", "II. A GAME OF CHESS"]
    # a stanza is one block: its sentence runs over the lines; line numbers and marks are gone
    assert _texts(book.chapters[0]) == [
        "I. THE BURIAL OF THE DEAD",
        "April is the cruellest month, breeding Lilacs out of the dead land, mixing Memory and "
        "desire, stirring Dull roots with spring rain.",
        "Winter kept us warm, covering Earth in forgetful snow.",
    ]
    assert _texts(book.chapters[1])[1] == (
        "The Chair she sat in, like a burnished throne, Glowed on the marble."
    )
    assert [s.pause_after for s in book.chapters[0].segments] == [
        "paragraph",
        "paragraph",
        "chapter",
    ]
    spoken = " ".join(s.spoken for s in book.segments)
    for unwanted in ("Ezekiel", "Eliot", "Ezra", "NOTES", "four", "*"):
        assert unwanted not in spoken
    skipped = "\n".join(loaded.skipped)
    assert "content.xhtml#titlepage: front matter: title page (section, 8 words)" in skipped
    assert "content.xhtml#rearnotes: notes (section, 11 words)" in skipped
    assert "content.xhtml: 1 line numbers, 2 note references" in skipped


def test_prose_in_divs_stays_one_block_a_paragraph(tmp_path):
    body = (
        "<h1>One</h1><div><div>It was late. The rain had stopped.</div>"
        "<div>She went out. Nobody saw her go.</div><div>The street was empty.</div></div>"
    )
    path = build_epub(tmp_path / "b.epub", [("a.xhtml", xhtml(body))], [("One", "a.xhtml")])
    book = load_epub(path).book
    pauses = [s.pause_after for s in book.chapters[0].segments]
    assert pauses == ["paragraph", "sentence", "paragraph", "sentence", "paragraph", "end"]


# --- a nested table of contents, three levels and a hidden fourth ------------------------------


def _anthology(tmp_path, **kwargs):
    stories = [("s1", "The Real Princess"), ("s2", "The Fir Tree"), ("s3", "The Happy Prince")]
    body = '<section id="sec"><h2>SECTION IV FAIRY STORIES</h2>'
    body += '<section id="intro"><h3>INTRODUCTORY</h3><p>These are stories of wonder.</p></section>'
    body += '<section id="bib" epub:type="bibliography"><h3>BIBLIOGRAPHY</h3><ol><li>Andersen, '
    body += "Fairy Tales.</li></ol></section>"
    for anchor, title in stories:
        body += f'<section id="{anchor}"><h3>{title}</h3><p>Once upon a time in {title}.</p>'
        body += f'<p id="{anchor}-2">Part two of {title} ends it.</p></section>'
    body += "</section>"
    nav = toc_nav(
        [
            (
                "SECTION IV FAIRY STORIES",
                "s04.xhtml#sec",
                [
                    ("INTRODUCTORY", "s04.xhtml#intro", []),
                    ("BIBLIOGRAPHY", "s04.xhtml#bib", []),
                    (
                        "Hans Christian Andersen",
                        None,
                        [
                            ("", "s04.xhtml#s1", [("Part two", "s04.xhtml#s1-2", [])], "hidden"),
                            ("The Fir Tree", "s04.xhtml#s2", []),
                        ],
                    ),
                    ("Oscar Wilde", None, [("The Happy Prince", "s04.xhtml#s3", [])]),
                ],
            )
        ]
    )
    path = build_epub(tmp_path / "anthology.epub", [("s04.xhtml", xhtml(body))], [], nav=nav)
    return load_epub(path, **kwargs)


def test_nested_toc_cuts_chapters_at_the_level_that_splits_the_book(tmp_path):
    loaded = _anthology(tmp_path)
    assert loaded.toc_depth == 3 and loaded.toc_depths == (1, 2, 3, 4)
    titles = [c.title for c in loaded.book.chapters]
    # the section's heading alone joins the first chapter; an entry without a label takes the
    # story's heading; the bibliography is left out
    assert titles == ["INTRODUCTORY", "The Real Princess", "The Fir Tree", "The Happy Prince"]
    assert _texts(loaded.book.chapters[0])[:2] == ["SECTION IV FAIRY STORIES", "INTRODUCTORY"]
    assert _texts(loaded.book.chapters[1]) == [
        "The Real Princess",
        "Once upon a time in The Real Princess.",
        "Part two of The Real Princess ends it.",
    ]
    assert any("#bib: back matter: bibliography (section, 4 words)" in s for s in loaded.skipped)
    assert "Andersen" not in " ".join(s.text for s in loaded.book.segments)


def test_toc_depth_chooses_the_level(tmp_path):
    whole = _anthology(tmp_path, toc_depth=1)
    assert [c.title for c in whole.book.chapters] == ["SECTION IV FAIRY STORIES"]
    assert whole.toc_depth == 1
    deepest = _anthology(tmp_path, toc_depth=9)  # past the deepest: the deepest
    assert deepest.toc_depth == 4
    assert [c.title for c in deepest.book.chapters][1:3] == ["The Real Princess", "Part two"]
    with pytest.raises(UserError, match="--toc-depth must be a whole number"):
        ProductionOptions(toc_depth=0)


# --- Standard Ebooks: every chapter under the half-title ---------------------------------------


def _standard_ebook(tmp_path, chapter_words: int = 40):
    def page(kind: str, body: str, body_type: str = "frontmatter") -> str:
        return xhtml(
            f'<section id="{kind}" epub:type="{kind}">{body}</section>', body_type=body_type
        )

    prose = " ".join(["The hens were restless that morning."] * (chapter_words // 6))
    documents = [
        (
            "titlepage.xhtml",
            page("titlepage", "<h1>Love Among the Chickens</h1><p>By P. G. Wodehouse.</p>"),
        ),
        (
            "imprint.xhtml",
            page("imprint", "<h2>Imprint</h2><p>This ebook is the product of many hours.</p>"),
        ),
        ("dedication.xhtml", page("dedication", "<p>To William Townend.</p>")),
        ("halftitlepage.xhtml", page("halftitlepage", "<h2>Love Among the Chickens</h2>")),
    ]
    toc = []
    for number, roman in enumerate(("I", "II", "III"), 1):
        documents.append(
            (
                f"chapter-{number}.xhtml",
                xhtml(
                    f'<section id="chapter-{number}" epub:type="chapter"><h2>{roman}</h2>'
                    f'<p>{prose}</p><p id="c{number}-mid">{prose}</p><p>The end of {roman}.</p>'
                    "</section>",
                    body_type="bodymatter",
                ),
            )
        )
        toc.append(
            (
                f"{roman}: Chapter {number}",
                f"chapter-{number}.xhtml",
                [("Middle", f"chapter-{number}.xhtml#c{number}-mid", [])],
            )
        )
    documents += [
        (
            "colophon.xhtml",
            page("colophon", "<p>Love Among the Chickens was published in 1906.</p>", "backmatter"),
        ),
        (
            "uncopyright.xhtml",
            page("copyright-page", "<p>May you do good and not evil.</p>", "backmatter"),
        ),
    ]
    nav = toc_nav(
        [
            ("Titlepage", "titlepage.xhtml", []),
            ("Imprint", "imprint.xhtml", []),
            ("Dedication", "dedication.xhtml", []),
            ("Love Among the Chickens", "halftitlepage.xhtml", toc),
            ("Colophon", "colophon.xhtml", []),
            ("Uncopyright", "uncopyright.xhtml", []),
        ]
    )
    return build_epub(tmp_path / "se.epub", documents, [], nav=nav)


def test_standard_ebooks_chapters_under_the_half_title(tmp_path):
    loaded = load_epub(_standard_ebook(tmp_path))
    titles = [c.title for c in loaded.book.chapters]
    assert titles == ["Dedication", "I: Chapter 1", "II: Chapter 2", "III: Chapter 3"]
    assert loaded.toc_depth == 2
    assert _texts(loaded.book.chapters[1])[0] == "I"
    skipped = "\n".join(loaded.skipped)
    for line in (
        "titlepage.xhtml#titlepage: front matter: title page (section, 8 words)",
        "imprint.xhtml#imprint: front matter: imprint (section, 9 words)",
        "halftitlepage.xhtml#halftitlepage: front matter: half-title page (section, 4 words)",
        "colophon.xhtml#colophon: front matter: colophon (section, 8 words)",
        "uncopyright.xhtml#copyright-page: front matter: copyright (section, 7 words)",
    ):
        assert line in skipped
    summaries = list_chapters(load_input(_standard_ebook(tmp_path), ProductionOptions()))
    assert [(s.number, s.title) for s in summaries][:2] == [(1, "Dedication"), (2, "I: Chapter 1")]
    assert summaries[1].words == _words(loaded.book.chapters[1])


def test_a_chapter_too_long_for_acx_is_cut_again_at_the_next_level(tmp_path, monkeypatch):
    monkeypatch.setattr(epub_chapters, "LONG_CHAPTER_WORDS", 30)
    loaded = load_epub(_standard_ebook(tmp_path, chapter_words=60))
    titles = [c.title for c in loaded.book.chapters]
    assert loaded.toc_depth == 2
    assert titles == ["Dedication", "I: Chapter 1", "Middle", "II: Chapter 2", "Middle",
                      "III: Chapter 3", "Middle"]  # fmt: skip
    asked = load_epub(_standard_ebook(tmp_path, chapter_words=60), toc_depth=2)
    assert len(asked.book.chapters) == 4  # the depth a producer asks for is kept


# --- the book's own speech markup: a PLS lexicon and ssml:ph -----------------------------------

GEORGIA = """
<section id="georgia"><h1>GEORGIA</h1>
  <p>Georgia lies between <span ssml:ph="ˈθɜrti dɪˈgriz">30°</span> and 35° N.<a
    epub:type="noteref" href="#fn1">1</a> The capital is Atlanta, near Macon and Augusta.</p>
  <aside epub:type="footnote" id="fn1"><p>Measured at the coast.</p></aside>
  <span epub:type="pagebreak" id="page752" title="752"/>
  <section id="climate"><h2>Climate</h2><p>The Piedmont is mild. Augusta is warm.</p>
    <p epub:type="note" id="fn2">A note inside the section.</p></section>
  <section id="history"><h2>History</h2><p>Savannah was founded in 1733.</p></section>
</section>
"""


def _georgia(tmp_path, lexicon: bytes) -> object:
    head = '<link rel="pronunciation" type="application/pls+xml" href="lexicon/en.pls"/>'
    nav = toc_nav(
        [
            (
                "GEORGIA",
                "georgia.xhtml#georgia",
                [
                    ("Climate", "georgia.xhtml#climate", []),
                    ("History", "georgia.xhtml#history", []),
                ],
            )
        ]
    )
    return build_epub(
        tmp_path / "georgia.epub",
        [("georgia.xhtml", xhtml(GEORGIA, head=head))],
        [],
        nav=nav,
        resources=[("lexicon/en.pls", "application/pls+xml", lexicon)],
    )


def test_pls_lexicon_and_ssml_ph_are_honoured(tmp_path):
    lexicon = pls([("Macon", "ˈmeɪkən"), ("Augusta", "ɔˈgʌstə"), ("Piedmont", "ˈpidmɒnt")])
    loaded = load_input(_georgia(tmp_path, lexicon), ProductionOptions())
    book = loaded.book
    assert [c.title for c in book.chapters] == ["GEORGIA", "Climate", "History"]
    assert loaded.toc_depth == 2
    first = book.chapters[0].segments[1]
    assert first.text == "Georgia lies between 30° and 35° N."
    assert first.spoken.startswith("Georgia lies between thirty degrees and thirty-five degrees")
    # ssml:ph on 30° only, in the IPA espeak-ng writes (r -> ɹ, g -> ɡ)
    assert first.phonemes == (("thirty degrees", "ˈθɜɹti dɪˈɡɹiz"),)
    second = book.chapters[0].segments[2]
    assert dict(second.phonemes) == {"Macon": "ˈmeɪkən", "Augusta": "ɔˈɡʌstə"}
    assert second.lexicon == ("Macon", "Augusta")
    sources = {e.pattern: e.source for e in loaded.lexicon.entries}
    assert sources == {"Macon": "OEBPS/lexicon/en.pls", "Augusta": "OEBPS/lexicon/en.pls",
                       "Piedmont": "OEBPS/lexicon/en.pls"}  # fmt: skip
    assert loaded.lexicon.entries[0].as_dict()["source"] == "OEBPS/lexicon/en.pls"
    spoken = " ".join(s.spoken for s in book.segments)
    assert "Measured" not in spoken and "note inside" not in spoken and "752" not in spoken
    skipped = "\n".join(loaded.skipped)
    assert "georgia.xhtml#fn1: notes (aside, 4 words)" in skipped
    assert "georgia.xhtml#fn2: notes (p, 5 words)" in skipped
    assert "georgia.xhtml: 1 note references, 1 page numbers" in skipped


def test_producer_lexicon_overrides_the_books_and_manifest_says_whose(tmp_path):
    from verified_tts.config import build_config
    from verified_tts.output.run_manifest import production_record

    own = tmp_path / "words.toml"
    own.write_text('[words]\nMacon = "May-kun"\n', encoding="utf-8")
    lexicon = pls([("Macon", "ˈmeɪkən"), ("Augusta", "ɔˈgʌstə")])
    options = ProductionOptions(lexicon=str(own))
    loaded = load_input(_georgia(tmp_path, lexicon), options)
    segment = loaded.book.chapters[0].segments[2]
    assert "May-kun" in segment.spoken and dict(segment.phonemes) == {"Augusta": "ɔˈɡʌstə"}
    record = production_record(build_config({}, production={"lexicon": str(own)}), loaded)
    entries = [(e["match"], e.get("source")) for e in record["lexicon_entries"]]
    assert entries == [("Macon", None), ("Augusta", "OEBPS/lexicon/en.pls")]
    assert record["toc_depth_cut"] == 2 and record["skipped"] == list(loaded.skipped)


def test_malformed_pls_and_unknown_symbols_are_warnings_not_refusals(tmp_path):
    bad_symbol = pls([("Macon", "ˈmeɪk☃n"), ("Augusta", "ɔˈgʌstə")])
    loaded = load_epub(_georgia(tmp_path, bad_symbol))
    assert [e.pattern for e in loaded.lexicon] == ["Augusta"]
    assert loaded.warnings == (
        "OEBPS/lexicon/en.pls entry 1 (Macon): unknown IPA symbol(s) '☃' (U+2603) in "
        "'ˈmeɪk☃n'; the entry is left out",
    )
    broken = load_epub(_georgia(tmp_path, b"<lexicon><lexeme>"))
    assert broken.lexicon == () and len(broken.book.chapters) == 3
    assert broken.warnings[0].startswith("OEBPS/lexicon/en.pls is not well-formed XML")

    def first_segment(ph: str, alphabet: str):
        body = GEORGIA.replace(
            'ssml:ph="ˈθɜrti dɪˈgriz"', f'ssml:ph="{ph}" ssml:alphabet="{alphabet}"'
        )
        path = build_epub(tmp_path / "s.epub", [("g.xhtml", xhtml(body))], [("GEORGIA", "g.xhtml")])
        loaded = load_epub(path)
        return loaded.book.chapters[0].segments[1].phonemes, loaded.warnings

    assert first_segment("&quot;T3rti dI&quot;gri:z", "x-sampa") == (
        (("thirty degrees", "ˈθɜɹti dɪˈɡɹiːz"),),
        (),
    )
    assert first_segment("'T3rti", "x-sampa")[0] == (("thirty degrees", "ˈθɜɹti"),)
    assert first_segment("T3;rti", "x-sampa") == (
        (),
        ("OEBPS/g.xhtml: ssml:ph on '30°': unknown X-SAMPA symbol(s) ';' (U+003B); left out",),
    )
    assert first_segment("sa-n-zyu:", "x-JEITA")[1] == (
        "OEBPS/g.xhtml: ssml:ph on '30°': alphabet 'x-JEITA' is neither IPA nor X-SAMPA; left out",
    )


def test_pls_ipa_maps_to_espeak_ng_symbols():
    assert espeak_ipa("ˈæbrəˌgeɪt", "en") == ("ˈæbɹəˌɡeɪt", ())
    assert espeak_ipa("ˌeɪlyəˈneɪʃəns", "en-US") == ("ˌeɪljəˈneɪʃəns", ())
    assert espeak_ipa("'ʧɛ.ri:", "fr") == ("ˈtʃɛriː", ())  # French r is not English ɹ
    assert espeak_ipa("ʬa", "en")[1] == ("ʬ",)
    entries = read_pls(pls([("bass", "beɪs"), ("Bass", "bæs")]), "x.pls", "en").entries
    assert [(e.pattern, e.phonemes) for e in entries] == [("bass", "beɪs")]  # first one wins
    sampa = pls([("Notre Dame", "noUt@r 'deIm"), ("bass", "b{s;")]).replace(b'"ipa"', b'"x-sampa"')
    lexicon = read_pls(sampa, "x.pls", "en")
    assert [(e.pattern, e.phonemes) for e in lexicon.entries] == [("Notre Dame", "noʊtəɹ ˈdeɪm")]
    assert lexicon.warnings == (
        "x.pls entry 2 (bass): unknown X-SAMPA symbol(s) ';' (U+003B) in 'b{s;'; the entry is "
        "left out",
    )


# --- a language no voice speaks ----------------------------------------------------------------


def _hebrew(tmp_path):
    documents = [("a.xhtml", xhtml("<h1>פרק א</h1><p>הפלגה קצרה עם רונית.</p>"))]
    return build_epub(tmp_path / "he.epub", documents, [("פרק א", "a.xhtml")], language="he")


def test_a_language_the_voice_does_not_speak_is_one_line_unless_overridden(tmp_path):
    path = _hebrew(tmp_path)
    loaded = load_input(path, ProductionOptions())
    with pytest.raises(UserError) as refused:
        check_language(loaded.book, GeneratorConfig(name="piper"), path)
    message = str(refused.value)
    assert "is in 'he' (its dc:language)" in message and "it speaks en_US" in message
    assert "orpheus (en)" in message and "--language-override en_US" in message
    check_language(loaded.book, GeneratorConfig(name="espeak", options={"language": "he"}), path)
    overridden = load_input(path, ProductionOptions(language_override="en"))
    assert overridden.book.language == "en"
    check_language(overridden.book, GeneratorConfig(name="piper"), path)
    english = load_input(_standard_ebook(tmp_path), ProductionOptions(language_override="en-GB"))
    check_language(english.book, GeneratorConfig(name="piper"), path)  # en-GB: English too
    with pytest.raises(UserError, match="not a language tag"):
        load_input(path, ProductionOptions(language_override="Hebrew!"))
    # a language the override asked for is the override's, not the book's dc:language
    german = load_input(_standard_ebook(tmp_path), ProductionOptions(language_override="de"))
    with pytest.raises(UserError) as refused:
        check_language(german.book, GeneratorConfig(name="piper"), path, overridden=True)
    message = str(refused.value)
    assert "--language-override de reads" in message and "dc:language" not in message
    assert "voices --language de" in message and "standin" not in message


def test_cli_refuses_the_language_in_one_line_and_lists_chapters(tmp_path):
    done = subprocess.run(
        [*CLI, "render", str(_hebrew(tmp_path)), "--out", str(tmp_path / "out")],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert "dc:language" in done.stderr
    book = tmp_path / "book.md"
    book.write_text("# Tale\n\n## One\n\nThe wolf ran.\n\n## Two\n\nA lamb sat by the river.\n")
    for path, titles in (
        (_standard_ebook(tmp_path), ["Dedication", "I: Chapter 1"]),
        (book, ["Tale", "One", "Two"]),
    ):
        out = tmp_path / "chapters.json"
        done = subprocess.run(
            [*CLI, "chapters", str(path), "--json", str(out)],
            cwd=ROOT, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        data = json.loads(out.read_text())
        assert [c["title"] for c in data["chapters"]][: len(titles)] == titles
        assert all(c["words"] > 0 for c in data["chapters"])
        assert titles[0] in done.stdout + done.stderr
