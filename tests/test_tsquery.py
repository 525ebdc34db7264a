"""The tsquery tree (chats/tsquery.py): PostgreSQL's query text read with its precedence, phrases kept whole as
what one message matches, and the terms that bound a search's candidates. Its answers against the database are in
tests/selectors/test_search.py."""

from __future__ import annotations

import pytest

from chats.tsquery import And, Not, Or, QuerySyntaxError, Term, cover, holds, is_monotone_union, parse, terms

A, B, C = Term("'a'"), Term("'b'"), Term("'c'")


def test_precedence_is_postgresqls_not_then_phrase_then_and_then_or() -> None:
    assert parse("'a' & !'b' | 'c'") == Or((And((A, Not(B))), C))
    assert parse("'a' & ( 'b' | 'c' )") == And((A, Or((B, C))))


def test_a_phrase_is_one_term_written_as_postgresql_wrote_it() -> None:
    assert parse("'annealing' <-> 'temperatur' & 'gel'") == And((Term("'annealing' <-> 'temperatur'"), Term("'gel'")))
    assert parse("!( 'covid-19' <-> 'covid' <2> '19' )") == Not(Term("'covid-19' <-> 'covid' <2> '19'"))


def test_quotes_inside_a_lexeme_and_weights_are_kept() -> None:
    assert parse("'o''brien':AB") == Term("'o''brien':AB")


def test_an_empty_query_is_none_and_broken_text_is_refused() -> None:
    assert parse("") is None and parse("   ") is None
    for broken in ["'a' &", "( 'a'", "'a' 'b'", "& 'a'", "'a' ) "]:
        with pytest.raises(QuerySyntaxError):
            parse(broken)


def test_terms_are_listed_once_in_order() -> None:
    tree = parse("'a' & !'b' | 'a' & 'c'")
    assert tree is not None and list(terms(tree)) == [A, B, C]


def test_holds_decides_a_conversation_from_the_terms_it_has() -> None:
    tree = parse("'a' & !'b'")
    assert tree is not None
    assert holds(tree, {A}.__contains__) and not holds(tree, {A, B}.__contains__)


def test_the_cover_takes_the_smallest_operand_of_a_conjunction_and_every_alternative() -> None:
    sizes = {A: 50, B: 3, C: 10}
    assert cover(And((A, B)), sizes.__getitem__) == frozenset({B})
    assert cover(Or((And((A, B)), C)), sizes.__getitem__) == frozenset({B, C})
    assert cover(And((A, Not(B))), sizes.__getitem__) == frozenset({A})
    assert cover(Not(A), sizes.__getitem__) is None  # an exclusion alone bounds nothing
    assert cover(Or((A, Not(B))), sizes.__getitem__) is None


def test_only_alternatives_of_terms_are_a_monotone_union() -> None:
    assert is_monotone_union(A) and is_monotone_union(Or((A, B)))
    assert not is_monotone_union(And((A, B))) and not is_monotone_union(Or((A, Not(B))))
