"""The demo gold set's questions, one function per slice, each with the documents that answer it
added to the builder. Part of `harness.demo.generate`."""

from __future__ import annotations

from collections.abc import Mapping

from harness.demo import vocabulary
from harness.demo.svc import CONCEPT_OF, STOPWORDS, THESAURUS
from harness.demo.world import (
    RECENT_DAYS,
    RECENT_MENTIONS,
    SLANG,
    SLICE_SIZES,
    Builder,
    Question,
    World,
    content_words,
    mention,
)

# --------------------------------------------------------------------------- questions


def exact_token_questions(b: Builder, codes: list[str], tickets: list[str]) -> None:
    rng = b.stream("exact_token_questions")
    wanted = {c.lower() for c in codes + tickets}
    holders: dict[str, list[int]] = {}  # code or ticket token -> the drafts holding it, in order
    for i, d in enumerate(b.drafts):
        for t in wanted.intersection(d.tokens):
            holders.setdefault(t, []).append(i)
    unique = [c for c in codes + tickets if len(holders.get(c.lower(), [])) == 1]
    picked = rng.sample([c for c in unique if c.startswith("ERR")], 25)
    picked += rng.sample([c for c in unique if c.startswith("OPS")], 10)
    for ident in picked:
        (answer,) = holders[ident.lower()]
        query = ident if rng.random() < 0.7 else f"what is {ident}"
        b.questions.append(
            Question(
                query,
                "exact_token",
                {answer: 1},
                f"{ident} occurs in exactly one document, its own page",
            )
        )


def freshness_questions(b: Builder, w: World) -> None:
    rng = b.stream("freshness_questions")
    pairs = [(s, a) for s in w.services if s not in w.queried for a in vocabulary.ATTRIBUTES]
    for number, (subject, (attribute, kind)) in enumerate(rng.sample(pairs, 55)):
        new, old = b.value(kind, w.staff), b.value(kind, w.staff)
        while old == new:
            old = b.value(kind, w.staff)
        recorder = rng.choice(w.staff)
        fresh_age, stale_age = rng.randint(0, 7), rng.randint(150, 800)

        fresh, stale = (
            b.add(
                f"Fact recorded {b.date(age)}",
                f"The {attribute} of {subject} is {value}. Recorded by {recorder}.",
                age,
            )
            for value, age in ((new, fresh_age), (old, stale_age))
        )
        if number >= SLICE_SIZES["freshness"]:
            continue  # recorded, never asked: the corpus holds more facts than the gold set
        query = rng.choice(
            [
                f"what is the {attribute} of {subject}",
                f"{subject} {attribute}",
                f"current {attribute} for {subject}",
            ]
        )
        b.questions.append(
            Question(
                query,
                "freshness",
                {fresh: 1, stale: 0},
                f"two facts with the same wording: {new} recorded {fresh_age} days ago "
                f"replaces {old} recorded {stale_age} days ago",
                ((fresh, stale),),
            )
        )


def superseded_questions(b: Builder, w: World) -> None:
    rng = b.stream("superseded_questions")
    pairs = [(s, d) for s in w.services if s not in w.queried for d in vocabulary.DECISIONS]
    for number, (s, (statement, question, kind)) in enumerate(rng.sample(pairs, 36)):
        old, new = b.value(kind, w.staff), b.value(kind, w.staff)
        while old == new:
            new = b.value(kind, w.staff)
        stale_age, fix_age = rng.randint(120, 900), rng.randint(1, 14)
        stale = b.add(
            f"Decision record {b.date(stale_age)}",
            f"Decision record: {statement.format(s=s, v=old)}. Agreed by {rng.choice(w.staff)}.",
            stale_age,
        )
        fix_text = rng.choice(
            [
                "Correction: {now}, not {old} as the earlier decision record said. "
                "That record is superseded. Confirmed by {who}.",
                "Update to the decision record of {date}: {now}. The previous value {old} no "
                "longer applies and the old record is superseded; ask {who} for context.",
                "Correction: {now}.",
            ]
        )
        fix = b.add(
            f"Correction {b.date(fix_age)}",
            fix_text.format(
                now=statement.format(s=s, v=new),
                old=old,
                who=rng.choice(w.staff),
                date=b.date(stale_age),
            ),
            fix_age,
        )
        if number >= SLICE_SIZES["superseded"]:
            continue
        b.questions.append(
            Question(
                question.format(s=s),
                "superseded",
                {fix: 1, stale: 0},
                f"a correction {fix_age} days old supersedes the decision of {stale_age} days "
                f"ago ({old} -> {new})",
                ((fix, stale),),
            )
        )


def _mentions_of(b: Builder, entity: str, skip: int) -> int:
    """How many documents other than `skip`, at most RECENT_DAYS old, name `entity`."""
    drafts = b.drafts
    return sum(1 for i in b.recent if i != skip and entity in drafts[i].body)


def entity_questions(b: Builder, w: World, pages: Mapping[str, int]) -> None:
    """Reference pages, with a chosen number of recent mentions added for each queried entity."""
    rng = b.stream("entity_questions")
    for entity in w.queried:
        target = rng.choice(RECENT_MENTIONS)
        for _ in range(target - _mentions_of(b, entity, pages[entity])):
            mention(b, w, entity, rng.randint(0, 7))
        for _ in range(rng.randint(2, 6)):
            mention(b, w, entity, rng.randint(90, 1000))
        if entity in w.services:
            query = rng.choice([entity, entity, f"what is {entity}"])
        elif entity in w.people:
            query = rng.choice([entity, f"who is {entity}"])
        else:
            query = entity
        recent = _mentions_of(b, entity, pages[entity])
        b.questions.append(
            Question(
                query,
                "entity",
                {pages[entity]: 1},
                f"the reference page of {entity}, {b.drafts[pages[entity]].age_days} days old; "
                f"recent mentions (documents at most {RECENT_DAYS} days old naming it): {recent}",
            )
        )


def background_mentions(b: Builder, w: World, count: int) -> None:
    rng = b.stream("background_mentions")
    entities = list(w.services) + list(w.teams) + list(w.people)
    for _ in range(count):
        mention(b, w, rng.choice(entities), int(rng.triangular(0, 1200, 60)))


def semantic_questions(b: Builder, runbooks: list[tuple[int, tuple[str, str, str]]]) -> None:
    rng = b.stream("semantic_questions")
    holding: dict[str, set[int]] = {}  # concept id -> the drafts holding it
    for i, d in enumerate(b.drafts):
        for concept in {CONCEPT_OF[t] for t in d.tokens if t in CONCEPT_OF}:
            holding.setdefault(concept, set()).add(i)
    templates = [
        "how do I {a} a {c} {o}",
        "{o} is {c}, how to {a} it",
        "{a} the {o} when it is {c}",
        "{c} {o}: {a}",
    ]
    count = 0
    for index, triple in rng.sample(runbooks, len(runbooks)):
        if len(set.intersection(*(holding.get(concept, set()) for concept in triple))) != 1:
            continue  # another document holds every concept too: the answer would be ambiguous
        draft = b.drafts[index]
        doc_words = set(content_words(draft.body))
        options = [
            [f for f in THESAURUS[concept] if f not in SLANG and f not in doc_words]
            for concept in triple
        ]
        if not all(options):
            continue
        forms = [rng.choice(choice) for choice in options]
        a, o, c = forms
        query = rng.choice(templates).format(a=a, o=o, c=c)
        if set(content_words(query)) & doc_words:
            continue
        b.questions.append(
            Question(
                query,
                "semantic",
                {index: 1},
                f"paraphrase of the only runbook holding concepts {', '.join(triple)}; "
                "shares no content word with it",
            )
        )
        count += 1
        if count == SLICE_SIZES["semantic"]:
            return


def nonsense_questions(b: Builder) -> None:
    rng = b.stream("nonsense_questions")
    known: set[str] = set()  # every token of the corpus, both ways of splitting
    for d in b.drafts:
        known.update(d.tokens)
    # WORD splits at every hyphen, tokens() keeps inner hyphens: WORD's words are exactly the
    # hyphen-separated parts of the tokens (both take maximal runs of the same characters).
    known.update(*(t.split("-") for t in list(known) if "-" in t))
    made = 0
    while made < SLICE_SIZES["nonsense"]:
        words = [
            "".join(rng.choice(part) for part in vocabulary.SYLLABLES)
            for _ in range(rng.randint(2, 3))
        ]
        if made % 10 == 9:  # three of thirty: a thesaurus-only slang word among the gibberish
            words[0] = SLANG[(made // 10) % len(SLANG)]
        if any(
            wd in known or (wd in CONCEPT_OF and wd not in SLANG) or wd in STOPWORDS for wd in words
        ):
            continue
        slang = [wd for wd in words if wd in SLANG]
        b.questions.append(
            Question(
                " ".join(words),
                "nonsense",
                {},
                "no token occurs in the corpus"
                + (f"; {slang[0]!r} is thesaurus-only slang" if slang else ""),
            )
        )
        made += 1
