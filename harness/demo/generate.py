"""The demo's corpus and gold set, generated deterministically from one seed.

    python -m harness.demo.generate OUTDIR      # writes OUTDIR/corpus.jsonl and OUTDIR/gold.jsonl

The corpus is an internal engineering wiki (service, team and people pages, runbooks, incidents,
error codes, tickets, standup notes, changelogs) plus memory-like facts, each document
`{"age_days", "id", "text", "title"}`. The gold set is in the native format (a header line, then
one query per line) and every answer is known by construction, in six slices:

- exact_token: an error code or ticket id that occurs in exactly one document.
- entity: a service, team or person; the answer is its (old) reference page, while a controlled
  number of newer documents merely mention it, so boosting recent documents pushes it down.
- freshness: a fact recorded twice with the same wording and different values; the newer one is
  relevant (grade 1), the older twin is judged not relevant (grade 0) and must rank below it.
- semantic: a paraphrase of a runbook that shares no content word (see `content_words`) with the
  runbook's title or text; the runbook is the only document holding all the query's concepts.
- superseded: a decision and the later correction that supersedes it; the correction is relevant,
  the decision is judged 0, and `outranks` asks for the correction above it.
- nonsense: unanswerable controls whose tokens occur in no document. A few contain a slang word
  that only the service's thesaurus knows, so a concept-matching service may answer them anyway.

Nothing here does I/O except `write` and `main`. The same seed gives the same bytes on any
platform and under any PYTHONHASHSEED: no set is iterated unsorted, and every random draw comes
from `random.Random(f"{seed}/{section}")`, one stream per section, so retuning one section leaves
the others' draws alone.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import random
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.demo import vocabulary
from harness.demo.svc import CONCEPT_OF, STOPWORDS, THESAURUS, concepts, tokens

SEED = 20240601
TODAY = dt.date(2024, 6, 1)  # age_days counts back from here; dates in the text agree with it
RECENT_DAYS = 30  # a mention at most this old is "newer" in the entity derivations

SLICE_SIZES: Mapping[str, int] = {
    "exact_token": 35,
    "entity": 40,
    "freshness": 40,
    "semantic": 35,
    "superseded": 30,
    "nonsense": 30,
}

# Thesaurus words the corpus never uses: only the service knows them (nonsense false positives).
SLANG = ("gummed", "kaput", "borked", "hosed")


# How often runbooks use each surface word of a concept, in thesaurus order: the house word
# mostly, so a paraphrase in other words meets few literal matches.
_FORM_WEIGHTS = (10.0, 2.0, 0.3, 0.3, 0.3)

# How many recent documents mention each queried entity (drawn per entity): the knob that sets
# how far a recency boost can push a reference page down.
_RECENT_MENTIONS = (0, 0, 0, 0, 1, 2, 4, 5, 6, 7, 8, 9, 10, 12, 14)

_WORD = re.compile(r"[^\W_]+")


def content_words(text: str) -> list[str]:
    """The semantic-slice check: lowercase, split on non-alphanumerics, drop stop words."""
    return [w for w in _WORD.findall(text.lower()) if w not in STOPWORDS]


# --------------------------------------------------------------------------- drafts


@dataclass(frozen=True)
class _Draft:
    title: str
    text: str
    age_days: int


@dataclass(frozen=True)
class _Question:
    query: str
    slice: str
    relevant: Mapping[int, int]  # draft index -> grade
    derivation: str
    outranks: tuple[tuple[int, int], ...] = ()


@dataclass
class _Builder:
    seed: int
    rng: random.Random = field(default_factory=random.Random)
    drafts: list[_Draft] = field(default_factory=list)
    questions: list[_Question] = field(default_factory=list)

    def stream(self, section: str) -> random.Random:
        """Switch to the random stream of one section, so tuning one leaves the others alone."""
        self.rng = random.Random(f"{self.seed}/{section}")  # str seeds hash with sha512: stable
        return self.rng

    def add(self, title: str, text: str, age: int) -> int:
        self.drafts.append(_Draft(title, text, age))
        return len(self.drafts) - 1

    def date(self, age: int) -> str:
        return (TODAY - dt.timedelta(days=age)).isoformat()

    def value(self, kind: str, people: Sequence[str]) -> str:
        rng = self.rng
        if kind.startswith("int:"):
            low, high = (int(part) for part in kind.split(":")[1:])
            return str(rng.randint(low, high))
        choices = {
            "region": vocabulary.REGIONS,
            "weekday": vocabulary.WEEKDAYS,
            "person": list(people),
            "time": [f"{h:02d}:{m:02d}" for h in range(24) for m in (0, 30)],
            "version": [f"{major}.{minor}" for major in range(1, 4) for minor in range(10)],
            "apiversion": [f"v{n}" for n in range(1, 7)],
            "channel": [f"#alerts-{b}" for b in vocabulary.BIRDS],
        }[kind]
        return rng.choice(choices)


@dataclass(frozen=True)
class _World:
    services: tuple[str, ...]
    teams: tuple[str, ...]  # "Team Heron"
    people: tuple[str, ...]  # "Priya Raman"
    hosts: tuple[str, ...]
    owner: Mapping[str, str]  # service -> team
    queried: tuple[str, ...]  # the entity slice asks about these services, teams and people
    staff: tuple[str, ...]  # the people not queried: they do the incidental work in the notes


def _world(rng: random.Random) -> _World:
    services = sorted(
        rng.sample(
            [f"{n}-{r}" for n in vocabulary.SERVICE_NOUNS for r in vocabulary.SERVICE_ROLES], 60
        )
    )
    teams = [f"Team {b.capitalize()}" for b in vocabulary.BIRDS]
    last = list(vocabulary.LAST_NAMES)
    rng.shuffle(last)
    people = [f"{f} {s}" for f, s in zip(vocabulary.FIRST_NAMES, last, strict=True)]
    hosts = sorted(
        {
            f"{k}-{e}-{rng.randint(1, 40):02d}"
            for k in vocabulary.HOST_KINDS
            for e in vocabulary.ENVIRONMENTS
            for _ in range(5)
        }
    )
    owner = {s: rng.choice(teams) for s in services}
    queried = rng.sample(services, 20) + rng.sample(teams, 8) + rng.sample(people, 12)
    staff = [p for p in people if p not in queried]
    return _World(
        tuple(services),
        tuple(teams),
        tuple(people),
        tuple(hosts),
        owner,
        tuple(queried),
        tuple(staff),
    )


# --------------------------------------------------------------------------- documents


def _reference_pages(b: _Builder, w: _World) -> dict[str, int]:
    rng, pages = b.stream("reference_pages"), {}
    for s in w.services:
        deps = rng.sample([d for d in w.services if d != s], 2)
        purpose, language = rng.choice(vocabulary.PURPOSES), rng.choice(vocabulary.LANGUAGES)
        text = (
            f"{s} is the {purpose} service. It is owned by {w.owner[s]} and written "
            f"in {language}. Source lives in the {s} repository and {s} ships through "
            f"the standard pipeline. The {s} on-call rotation is paged through #{s}-oncall. "
            f"Upstream dependencies of {s}: {deps[0]} and {deps[1]}. "
            f"Primary contact: {rng.choice(w.people)}."
        )
        pages[s] = b.add(f"{s}: service overview", text, rng.randint(300, 1500))
    for t in w.teams:
        owned = [s for s in w.services if w.owner[s] == t] or [rng.choice(w.services)]
        members = rng.sample(w.people, 3)
        text = (
            f"{t} owns {', '.join(owned)}. Members of {t}: {', '.join(members)}. {t} plans "
            f"on {rng.choice(vocabulary.WEEKDAYS)}s in #{t.split()[1].lower()}-planning. "
            f"{t} is managed by {rng.choice(w.people)}."
        )
        pages[t] = b.add(f"{t}: team page", text, rng.randint(300, 1500))
    for p in w.people:
        first = p.split()[0]
        s1, s2 = rng.sample(w.services, 2)
        team, city = rng.choice(w.teams), rng.choice(vocabulary.CITIES)
        text = (
            f"{p} is an engineer in {team}, based in {city}. "
            f"{first} works mostly on {s1} and {s2}. Ask {p} about {rng.choice(vocabulary.TOPICS)}."
        )
        pages[p] = b.add(f"{p}: profile", text, rng.randint(300, 1500))
    for h in w.hosts:
        text = f"{h} runs {rng.choice(w.services)}, rack {rng.randint(1, 30)}."
        b.add(f"Host {h}", f"{text} Owner: {rng.choice(w.teams)}.", rng.randint(200, 1500))
    return pages


def _aside(w: _World, entity: str, rng: random.Random) -> str:
    """A clause that names `entity` once, in passing."""
    if entity in w.owner:
        return rng.choice(
            [
                f"{entity} deploy looked clean",
                f"{entity} dashboards were checked",
                f"nothing new from {entity}",
            ]
        )
    if entity in w.teams:
        return rng.choice([f"{entity} took the follow-up", f"{entity} asked for a review"])
    return rng.choice([f"{entity} reviewed the change", f"thanks to {entity} for pairing"])


def _mention(b: _Builder, w: _World, entity: str, age: int) -> int:
    """A standup note, changelog entry or meeting note that names `entity` once, in passing."""
    rng = b.rng
    other, host, aside = rng.choice(w.staff), rng.choice(w.hosts), _aside(w, entity, rng)
    kind = rng.randrange(3)
    if kind == 0:
        title = f"Standup notes {b.date(age)}"
        text = f"{other}: {rng.choice(vocabulary.CHANGES)} on {host}; {aside}. No blockers."
    elif kind == 1:
        title = f"Changelog {b.date(age)}"
        build, change = rng.randint(100, 999), rng.choice(vocabulary.CHANGES)
        text = f"Released build {build}: {change}, rolled out by {other} on {host}; {aside}."
    else:
        title = f"Weekly sync {b.date(age)}"
        text = f"Agenda: {rng.choice(vocabulary.TOPICS)}. {other} follows up on {host}; {aside}."
    return b.add(title, text, age)


def _runbooks(b: _Builder, w: _World) -> list[tuple[int, tuple[str, str, str]]]:
    """~300 runbooks, each on a unique (action, object, condition) concept triple."""
    rng = b.stream("runbooks")
    triples = [
        (a, o, c)
        for a in vocabulary.ACTIONS
        for o in vocabulary.OBJECTS
        for c in vocabulary.CONDITIONS
    ]
    out = []
    for a, o, c in rng.sample(triples, 300):
        fa, fo, fc = (_doc_form(rng, concept) for concept in (a, o, c))
        s = rng.choice(w.services)
        title = f"Runbook: {fa} {fc} {fo}"
        text = (
            f"When the {fo} of {s} is {fc}, {fa} it from the admin console and watch the {fo} "
            f"come back healthy. Owned by {w.owner[s]}; escalate to {rng.choice(w.staff)}."
        )
        out.append((b.add(title, text, rng.randint(5, 1200)), (a, o, c)))
    return out


def _doc_form(rng: random.Random, concept: str) -> str:
    """The surface word a runbook uses for a concept: mostly the first, never slang."""
    forms = [f for f in THESAURUS[concept] if f not in SLANG]
    return rng.choices(forms, weights=_FORM_WEIGHTS[: len(forms)])[0]


def _incidents_and_codes(b: _Builder, w: _World) -> tuple[list[str], list[str]]:
    """Error-code pages, tickets and incidents; returns every error code and ticket id made."""
    rng = b.stream("incidents_and_codes")
    codes = [f"ERR-{n}" for n in rng.sample(range(10000, 100000), 220)]
    tickets = [f"OPS-{n}" for n in rng.sample(range(1000, 10000), 160)]
    for code in codes:
        s = rng.choice(w.services)
        b.add(
            f"{code}: {rng.choice(vocabulary.ERROR_REASONS)}",
            f"{code} is raised by {s} in that case. "
            f"Callers should fix the request; {w.owner[s]} can help.",
            rng.randint(30, 1500),
        )
    for ticket in tickets:
        s = rng.choice(w.services)
        b.add(
            f"{ticket}: {rng.choice(vocabulary.CHANGES)}",
            f"Ticket {ticket} for {s}, assigned to {rng.choice(w.staff)}. "
            f"Status: {rng.choice(vocabulary.STATUSES)}.",
            rng.randint(1, 600),
        )
    for n in rng.sample(range(1000, 9999), 260):
        s = rng.choice(w.services)
        c = THESAURUS[rng.choice(vocabulary.CONDITIONS)][0]  # incident write-ups use the house word
        b.add(
            f"INC-{n} postmortem",
            f"Incident INC-{n}: {s} was {c} for {rng.randint(3, 240)} minutes. "
            f"{rng.choice(codes)} showed up in the error rate; tracked in {rng.choice(tickets)}. "
            f"Mitigated by {rng.choice(w.staff)}.",
            rng.randint(1, 900),
        )
    return codes, tickets


# --------------------------------------------------------------------------- questions


def _exact_token_questions(b: _Builder, codes: list[str], tickets: list[str]) -> None:
    rng = b.stream("exact_token_questions")
    holders: dict[str, list[int]] = {}
    for i, d in enumerate(b.drafts):
        for t in dict.fromkeys(tokens(f"{d.title} {d.text}")):
            holders.setdefault(t, []).append(i)
    unique = [c for c in codes + tickets if len(holders.get(c.lower(), [])) == 1]
    picked = rng.sample([c for c in unique if c.startswith("ERR")], 25)
    picked += rng.sample([c for c in unique if c.startswith("OPS")], 10)
    for ident in picked:
        (answer,) = holders[ident.lower()]
        query = ident if rng.random() < 0.7 else f"what is {ident}"
        b.questions.append(
            _Question(
                query,
                "exact_token",
                {answer: 1},
                f"{ident} occurs in exactly one document, its own page",
            )
        )


def _freshness_questions(b: _Builder, w: _World) -> None:
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
            _Question(
                query,
                "freshness",
                {fresh: 1, stale: 0},
                f"two facts with the same wording: {new} recorded {fresh_age} days ago "
                f"replaces {old} recorded {stale_age} days ago",
                ((fresh, stale),),
            )
        )


def _superseded_questions(b: _Builder, w: _World) -> None:
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
            _Question(
                question.format(s=s),
                "superseded",
                {fix: 1, stale: 0},
                f"a correction {fix_age} days old supersedes the decision of {stale_age} days "
                f"ago ({old} -> {new})",
                ((fix, stale),),
            )
        )


def _mentions_of(b: _Builder, entity: str, skip: int) -> int:
    """How many documents other than `skip`, at most RECENT_DAYS old, name `entity`."""
    return sum(
        1
        for i, d in enumerate(b.drafts)
        if i != skip and d.age_days <= RECENT_DAYS and entity in f"{d.title} {d.text}"
    )


def _entity_questions(b: _Builder, w: _World, pages: Mapping[str, int]) -> None:
    """Reference pages, with a chosen number of recent mentions added for each queried entity."""
    rng = b.stream("entity_questions")
    for entity in w.queried:
        target = rng.choice(_RECENT_MENTIONS)
        for _ in range(target - _mentions_of(b, entity, pages[entity])):
            _mention(b, w, entity, rng.randint(0, 7))
        for _ in range(rng.randint(2, 6)):
            _mention(b, w, entity, rng.randint(90, 1000))
        if entity in w.services:
            query = rng.choice([entity, entity, f"what is {entity}"])
        elif entity in w.people:
            query = rng.choice([entity, f"who is {entity}"])
        else:
            query = entity
        recent = _mentions_of(b, entity, pages[entity])
        b.questions.append(
            _Question(
                query,
                "entity",
                {pages[entity]: 1},
                f"the reference page of {entity}, {b.drafts[pages[entity]].age_days} days old; "
                f"recent mentions (documents at most {RECENT_DAYS} days old naming it): {recent}",
            )
        )


def _background_mentions(b: _Builder, w: _World, count: int) -> None:
    rng = b.stream("background_mentions")
    entities = list(w.services) + list(w.teams) + list(w.people)
    for _ in range(count):
        _mention(b, w, rng.choice(entities), int(rng.triangular(0, 1200, 60)))


def _semantic_questions(b: _Builder, runbooks: list[tuple[int, tuple[str, str, str]]]) -> None:
    rng = b.stream("semantic_questions")
    concept_sets = [frozenset(concepts(f"{d.title} {d.text}")) for d in b.drafts]
    templates = [
        "how do I {a} a {c} {o}",
        "{o} is {c}, how to {a} it",
        "{a} the {o} when it is {c}",
        "{c} {o}: {a}",
    ]
    count = 0
    for index, triple in rng.sample(runbooks, len(runbooks)):
        if sum(1 for held in concept_sets if held.issuperset(triple)) != 1:
            continue  # another document holds every concept too: the answer would be ambiguous
        draft = b.drafts[index]
        doc_words = set(content_words(f"{draft.title} {draft.text}"))
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
            _Question(
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


def _nonsense_questions(b: _Builder) -> None:
    rng = b.stream("nonsense_questions")
    known: set[str] = set()  # every token of the corpus, both ways of splitting
    for d in b.drafts:
        known.update(tokens(f"{d.title} {d.text}"))
        known.update(_WORD.findall(f"{d.title} {d.text}".lower()))
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
            _Question(
                " ".join(words),
                "nonsense",
                {},
                "no token occurs in the corpus"
                + (f"; {slang[0]!r} is thesaurus-only slang" if slang else ""),
            )
        )
        made += 1


# --------------------------------------------------------------------------- assembly


@dataclass(frozen=True)
class DemoData:
    """The generated files, as bytes, and the sha256 of the corpus recorded in the gold header."""

    corpus: bytes
    gold: bytes
    corpus_sha256: str


def _line(obj: object) -> str:
    return json.dumps(obj, sort_keys=True) + "\n"


def generate(seed: int = SEED) -> DemoData:
    """Build the corpus and gold set in memory; the same seed always gives the same bytes."""
    b = _Builder(seed)
    world = _world(b.stream("world"))
    pages = _reference_pages(b, world)
    runbooks = _runbooks(b, world)
    codes, tickets = _incidents_and_codes(b, world)
    _background_mentions(b, world, 1400)
    _freshness_questions(b, world)
    _superseded_questions(b, world)
    _entity_questions(b, world, pages)
    _exact_token_questions(b, codes, tickets)
    _semantic_questions(b, runbooks)
    _nonsense_questions(b)

    order = list(range(len(b.drafts)))
    b.stream("order").shuffle(order)  # corpus order, so tie-breaks, carries no hint of kind
    ids = {draft: f"kb-{position:05d}" for position, draft in enumerate(order, start=1)}
    corpus = "".join(
        _line(
            {
                "id": ids[i],
                "title": b.drafts[i].title,
                "text": b.drafts[i].text,
                "age_days": b.drafts[i].age_days,
            }
        )
        for i in order
    ).encode("utf-8")
    sha = hashlib.sha256(corpus).hexdigest()

    by_slice = {name: [q for q in b.questions if q.slice == name] for name in SLICE_SIZES}
    for name, size in SLICE_SIZES.items():
        if len(by_slice[name]) != size:
            raise RuntimeError(f"generator bug: slice {name} has {len(by_slice[name])} queries")
    header = {
        "format": "harness-gold",
        "version": 1,
        "corpus": {"name": "corpus.jsonl", "sha256": sha},
        "description": (
            f"harness demo gold set (seed {seed}): an engineering wiki of {len(order)} documents; "
            + ", ".join(f"{name} {size}" for name, size in SLICE_SIZES.items())
        ),
    }
    rows = [_line(header)]
    number = 0
    for name in SLICE_SIZES:
        for q in by_slice[name]:
            number += 1
            row: dict[str, object] = {
                "id": f"q{number:03d}",
                "query": q.query,
                "slice": q.slice,
                "relevant": {ids[i]: grade for i, grade in q.relevant.items()},
                "derivation": q.derivation,
            }
            if q.outranks:
                row["outranks"] = [[ids[a], ids[z]] for a, z in q.outranks]
            rows.append(_line(row))
    return DemoData(corpus, "".join(rows).encode("utf-8"), sha)


def write(outdir: Path, seed: int = SEED) -> tuple[Path, Path]:
    """Write corpus.jsonl and gold.jsonl into `outdir` (created if missing); returns both paths."""
    data = generate(seed)
    outdir.mkdir(parents=True, exist_ok=True)
    corpus, gold = outdir / "corpus.jsonl", outdir / "gold.jsonl"
    corpus.write_bytes(data.corpus)
    gold.write_bytes(data.gold)
    return corpus, gold


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m harness.demo.generate",
        description="Write the demo corpus.jsonl and gold.jsonl into OUTDIR.",
    )
    parser.add_argument("outdir", type=Path)
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args(argv)
    corpus, gold = write(args.outdir, args.seed)
    print(f"wrote {corpus} and {gold}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
