"""Contextual headers (embed/headers.py): what is embedded with each sentence. Pure: no database."""
from __future__ import annotations

from windowrag_pg.embed.headers import contextual_header, embedding_text, header_title
from windowrag_pg.ingest import embedding_texts
from windowrag_pg.parse import parse_document
from windowrag_pg.split.sentences import split_units


def test_a_title_someone_wrote_is_kept():
    assert header_title("1973 oil crisis") == "1973 oil crisis"
    assert header_title("  Super   Bowl 50 ") == "Super Bowl 50"
    assert header_title("Victoria (Australia)") == "Victoria (Australia)"
    assert header_title("Oxygen") == "Oxygen"
    assert header_title("Release notes v. 2.0") == "Release notes v. 2.0"


def test_a_file_name_or_a_title_without_a_word_is_left_out():
    # ContractNLI's titles are file names: before every sentence they cost the contracts a point
    for name in ("09-24-2019-04-25-05-3914910473.pdf", "Annex 18 - Non-Disclosure Agreement.pdf",
                 "ATI%20504%20US%20Mutual%20NDA", "3511_standard_nda", "CNDA1218Draft3", "employee-handbook.md",
                 "2019-01-01", "", "   ", None):
        assert header_title(name) is None, name


def test_the_header_joins_title_and_headings_without_repeating_the_h1():
    assert contextual_header("Handbook", ["Handbook", "Benefits", "Dental"]) == "Handbook › Benefits › Dental"
    assert contextual_header("handbook", ["HANDBOOK"]) == "handbook"
    assert contextual_header(None, ["Benefits", "", "Dental"]) == "Benefits › Dental"
    assert contextual_header("12345.pdf", []) == ""
    assert embedding_text("It covers you.", title="Handbook", heading_path=["Dental"]) == "Handbook › Dental: It covers you."
    assert embedding_text("It covers you.", title="0001.txt", heading_path=[]) == "It covers you."


def test_each_unit_gets_the_header_of_its_own_section():
    text = "# Handbook\n\n## Benefits\n\nWe offer benefits.\n\n### Dental\n\nThe dental plan is free.\n"
    parsed = parse_document(text, "markdown")
    units = split_units(parsed)
    texts = dict(zip((u.text for u in units), embedding_texts(parsed, units, title=parsed.title,
                                                               contextual_headers=True)))
    assert texts["We offer benefits."] == "Handbook › Benefits: We offer benefits."
    assert texts["The dental plan is free."] == "Handbook › Benefits › Dental: The dental plan is free."
    assert embedding_texts(parsed, units, title=parsed.title, contextual_headers=False) == [u.text for u in units]


def test_a_long_title_or_heading_is_cut_so_the_unit_keeps_its_room():
    """Found by a tester: a 230 KB heading was written before each of 2,000 sentences (3.4 GB to
    embed), and the model, which reads 512 tokens, read none of the sentence."""
    from windowrag_pg.embed.headers import MAX_HEADER_CHARS, MAX_HEADER_PART_CHARS, contextual_header, embedding_text

    long_heading = "Benefits " * 30_000
    text = embedding_text("Dental is covered.", title="Handbook", heading_path=("Pay", long_heading))
    header = text.removesuffix(": Dental is covered.")
    assert header.startswith("Handbook › Pay › Benefits") and header.endswith("…")
    assert len(header.split(" › ")[-1]) == MAX_HEADER_PART_CHARS
    deep = contextual_header("Handbook", [f"Level {i} " + "x" * 150 for i in range(10)])
    assert len(deep) <= MAX_HEADER_CHARS and deep.startswith("Handbook › ") and "Level 9" in deep
    assert contextual_header("Handbook", ["Pay", "Dental"]) == "Handbook › Pay › Dental"  # short ones as before
