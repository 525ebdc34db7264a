"""A text-search query (PostgreSQL's tsquery, as `websearch_to_tsquery` writes it) as a tree of what one message
can match, so that a conversation is searched as one text while each message keeps its own vector.

A conversation matches ``thermocycler -nitrocellulose`` when some message (or its title) holds the first word and
none holds the second: the words' boolean combination is decided per conversation, each word per message. A
phrase (``"annealing temperature"``, and a word the parser splits, ``covid-19``) is matched within one message.

Pure: no Django, no database. `parse` reads the query's text form; `cover` picks the words whose matches bound a
search's candidates; `holds` decides a conversation from the words it has.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Term:
    """What one message (or a title) matches on its own: a lexeme, or a phrase, as tsquery text."""

    query: str


@dataclass(frozen=True, slots=True)
class Not:
    operand: Node


@dataclass(frozen=True, slots=True)
class And:
    operands: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Or:
    operands: tuple[Node, ...]


type Node = Term | Not | And | Or

_TOKEN = re.compile(r"\s*(?:('(?:[^']|'')*'(?::[*A-Da-d]+)?)|(<->|<\d+>)|([&|!()]))")


class QuerySyntaxError(ValueError):
    pass


def _tokens(text: str) -> list[str]:
    tokens, at = [], 0
    text = text.rstrip()
    while at < len(text):
        match = _TOKEN.match(text, at)
        if match is None:
            raise QuerySyntaxError(f"unexpected text at {at}: {text[at : at + 20]!r}")
        tokens.append(match.group(match.lastindex or 0))
        at = match.end()
    return tokens


def parse(text: str) -> Node | None:
    """The tree of a tsquery's text form; None for an empty query (only stop words), which matches nothing.

    Precedence as PostgreSQL's: ``!`` binds tightest, then the phrase operators, then ``&``, then ``|``.
    """
    tokens = _tokens(text)
    if not tokens:
        return None
    parser = _Parser(tokens)
    node = parser.disjunction()
    if parser.at != len(tokens):
        raise QuerySyntaxError(f"unexpected {tokens[parser.at]!r}")
    return node


class _Parser:
    def __init__(self, tokens: list[str]) -> None:
        self.tokens = tokens
        self.at = 0

    def _peek(self) -> str | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def disjunction(self) -> Node:
        operands = [self.conjunction()]
        while self._peek() == "|":
            self.at += 1
            operands.append(self.conjunction())
        return operands[0] if len(operands) == 1 else Or(tuple(operands))

    def conjunction(self) -> Node:
        operands = [self.phrase()]
        while self._peek() == "&":
            self.at += 1
            operands.append(self.phrase())
        return operands[0] if len(operands) == 1 else And(tuple(operands))

    def phrase(self) -> Node:
        start = self.at
        node = self.unary()
        joined = False
        while (token := self._peek()) is not None and token.startswith("<"):
            self.at += 1
            self.unary()
            joined = True
        # A phrase is matched within one message, as written: its tokens are valid tsquery text.
        return Term(" ".join(self.tokens[start : self.at])) if joined else node

    def unary(self) -> Node:
        symbol = self._peek()
        if symbol is None:
            raise QuerySyntaxError("the query ends early")
        self.at += 1
        if symbol == "!":
            return Not(self.unary())
        if symbol == "(":
            node = self.disjunction()
            if self._peek() != ")":
                raise QuerySyntaxError("a parenthesis is not closed")
            self.at += 1
            return node
        if symbol.startswith("'"):
            return Term(symbol)
        raise QuerySyntaxError(f"unexpected {symbol!r}")


def terms(node: Node) -> Iterator[Term]:
    """Every term of the tree, once each, in order."""
    seen: set[Term] = set()
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, Term):
            if current not in seen:
                seen.add(current)
                yield current
        elif isinstance(current, Not):
            stack.append(current.operand)
        else:
            stack.extend(reversed(current.operands))


def holds(node: Node, has: Callable[[Term], bool]) -> bool:
    """Whether a conversation matches, given which terms it has (in a message or its title)."""
    if isinstance(node, Term):
        return has(node)
    if isinstance(node, Not):
        return not holds(node.operand, has)
    if isinstance(node, And):
        return all(holds(operand, has) for operand in node.operands)
    return any(holds(operand, has) for operand in node.operands)


def cover(node: Node, size: Callable[[Term], int]) -> frozenset[Term] | None:
    """Terms of which every matching conversation has at least one, chosen small by ``size`` (how many
    conversations have a term); None when there are none (a query that only excludes, ``-word``)."""
    if isinstance(node, Term):
        return frozenset({node})
    if isinstance(node, Not):
        return None
    covers = [cover(operand, size) for operand in node.operands]
    if isinstance(node, Or):
        if any(c is None for c in covers):
            return None
        return frozenset().union(*(c for c in covers if c is not None))
    # And: any operand's cover bounds the whole; the smallest does best.
    found = [c for c in covers if c is not None]
    if not found:
        return None
    return min(found, key=lambda c: sum(size(term) for term in c))


def is_monotone_union(node: Node) -> bool:
    """Whether the query is terms joined by ``|`` alone (or one term): then it matches at least as many
    conversations as any one of its terms."""
    if isinstance(node, Term):
        return True
    return isinstance(node, Or) and all(is_monotone_union(operand) for operand in node.operands)
