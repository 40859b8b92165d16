"""The demo corpus's world: its constants, the draft builder, and the corpus sections (reference
pages, runbooks, incidents, codes, background mentions). Part of `harness.demo.generate`."""

from __future__ import annotations

import datetime as dt
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from harness.demo import vocabulary
from harness.demo.svc import STOPWORDS, THESAURUS, tokens

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
RECENT_MENTIONS = (0, 0, 0, 0, 1, 2, 4, 5, 6, 7, 8, 9, 10, 12, 14)

WORD = re.compile(r"[^\W_]+")


def content_words(text: str) -> list[str]:
    """The semantic-slice check: lowercase, split on non-alphanumerics, drop stop words."""
    return [w for w in WORD.findall(text.lower()) if w not in STOPWORDS]


# --------------------------------------------------------------------------- drafts


@dataclass(frozen=True)
class _Draft:
    title: str
    text: str
    age_days: int
    # Derived once, when the draft is made: every slice reads them.
    body: str = field(init=False, repr=False, compare=False)  # the title and text, as indexed
    tokens: tuple[str, ...] = field(init=False, repr=False, compare=False)  # svc.tokens(body)

    def __post_init__(self) -> None:
        body = f"{self.title} {self.text}"
        object.__setattr__(self, "body", body)
        object.__setattr__(self, "tokens", tuple(tokens(body)))


@dataclass(frozen=True)
class Question:
    query: str
    slice: str
    relevant: Mapping[int, int]  # draft index -> grade
    derivation: str
    outranks: tuple[tuple[int, int], ...] = ()


# The values `Builder.value` draws from, by kind ("person" draws from the people it is given).
_VALUES: Mapping[str, Sequence[str]] = {
    "region": vocabulary.REGIONS,
    "weekday": vocabulary.WEEKDAYS,
    "time": [f"{h:02d}:{m:02d}" for h in range(24) for m in (0, 30)],
    "version": [f"{major}.{minor}" for major in range(1, 4) for minor in range(10)],
    "apiversion": [f"v{n}" for n in range(1, 7)],
    "channel": [f"#alerts-{b}" for b in vocabulary.BIRDS],
}


@dataclass
class Builder:
    seed: int
    rng: random.Random = field(default_factory=random.Random)
    drafts: list[_Draft] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)
    recent: list[int] = field(default_factory=list)  # drafts at most RECENT_DAYS old, in order

    def stream(self, section: str) -> random.Random:
        """Switch to the random stream of one section, so tuning one leaves the others alone."""
        self.rng = random.Random(f"{self.seed}/{section}")  # str seeds hash with sha512: stable
        return self.rng

    def add(self, title: str, text: str, age: int) -> int:
        self.drafts.append(_Draft(title, text, age))
        if age <= RECENT_DAYS:
            self.recent.append(len(self.drafts) - 1)
        return len(self.drafts) - 1

    def date(self, age: int) -> str:
        return (TODAY - dt.timedelta(days=age)).isoformat()

    def value(self, kind: str, people: Sequence[str]) -> str:
        rng = self.rng
        if kind.startswith("int:"):
            low, high = (int(part) for part in kind.split(":")[1:])
            return str(rng.randint(low, high))
        choices = people if kind == "person" else _VALUES[kind]
        return rng.choice(choices)


@dataclass(frozen=True)
class World:
    services: tuple[str, ...]
    teams: tuple[str, ...]  # "Team Heron"
    people: tuple[str, ...]  # "Priya Raman"
    hosts: tuple[str, ...]
    owner: Mapping[str, str]  # service -> team
    queried: tuple[str, ...]  # the entity slice asks about these services, teams and people
    staff: tuple[str, ...]  # the people not queried: they do the incidental work in the notes


def make_world(rng: random.Random) -> World:
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
    return World(
        tuple(services),
        tuple(teams),
        tuple(people),
        tuple(hosts),
        owner,
        tuple(queried),
        tuple(staff),
    )


# --------------------------------------------------------------------------- documents


def reference_pages(b: Builder, w: World) -> dict[str, int]:
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


def _aside(w: World, entity: str, rng: random.Random) -> str:
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


def mention(b: Builder, w: World, entity: str, age: int) -> int:
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


def write_runbooks(b: Builder, w: World) -> list[tuple[int, tuple[str, str, str]]]:
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


def incidents_and_codes(b: Builder, w: World) -> tuple[list[str], list[str]]:
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
