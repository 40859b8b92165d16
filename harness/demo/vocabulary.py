"""The words the demo wiki is written with: names, templates, and the runbook concepts.

Pure data for harness.demo.generate. Changing a list changes the generated corpus and gold set
(and so their hashes), but not their structure.
"""

from __future__ import annotations


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


def _phrases(text: str) -> tuple[str, ...]:
    return tuple(text.replace("\n", " ").split("|"))


# Runbooks are "when the <object> is <condition>, <action> it": concept ids of the thesaurus.
ACTIONS = _words(
    """restart rollback rotate restore purge failover scale migrate silence retry drain
diagnose"""
)
OBJECTS = _words(
    """queue certificate database backup cache password replica container dashboard webhook dns
disk apikey vpn email logs"""
)
CONDITIONS = _words(
    """stuck expired full slow failing missing duplicated leaking flaky corrupted overloaded
unreachable"""
)

SERVICE_NOUNS = _words(
    """ledger atlas orbit quartz nimbus harbor beacon cobalt prism vertex summit meadow canyon
glacier ember tundra lumen pixel vector onyx juniper saffron tempest zephyr"""
)
SERVICE_ROLES = _words("api sync gateway indexer scheduler proxy store router ingest notifier")
BIRDS = _words(
    """heron osprey kestrel plover wren puffin egret condor swift tern ibis merlin shrike finch
lark raven"""
)
FIRST_NAMES = _words(
    """Priya Tomasz Amara Kenji Lucia Dmitri Sofia Mateo Aisha Henrik Yara Oskar Leila Ravi
Ingrid Diego Mei Tobias Nadia Felix Zara Emil Chiara Kofi Hana Anders Ines Jonas Farah
Bruno Elif Marek Noor Stefan Camila Arjun Greta Omar Lena Pablo"""
)
LAST_NAMES = _words(
    """Raman Kowalski Okafor Tanaka Ferreira Volkov Rossi Alvarez Haddad Lindqvist Nasser Berg
Farouk Iyer Solberg Moreno Chen Keller Petrova Wagner Malik Novak Bianchi Mensah Sato
Holm Duarte Richter Aziz Costa Yilmaz Dvorak Rahman Weber Rojas Nair Larsen Khalil
Fischer Ortega"""
)
PURPOSES = _phrases(
    """payments reconciliation|search indexing|notification fan-out|user profiles|feature
flags|metrics ingestion|invoice rendering|session management|rate limiting|audit trail|image
thumbnails|geo lookup|recommendations|report export|order routing|inventory sync|pricing
rules|fraud scoring"""
)
LANGUAGES = ("Go", "Rust", "Python", "Kotlin", "TypeScript", "Java")
CITIES = ("Lisbon", "Berlin", "Toronto", "Nairobi", "Osaka", "Warsaw", "Austin", "Dublin")
HOST_KINDS = ("db", "web", "kafka", "redis", "etl", "gpu", "edge", "build")
ENVIRONMENTS = ("prod", "stage")
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")
REGIONS = ("eu-west-1", "eu-central-1", "us-east-1", "us-west-2", "ap-south-1")
STATUSES = ("open", "in progress", "done", "won't fix")
CHANGES = _phrases(
    """tightened input validation|upgraded the HTTP client|added a readiness probe|removed
the legacy v1 endpoints|switched to structured logging|cut cold-start time|added tracing
spans|reworked retries with jitter|dropped an unused column|bumped the runtime"""
)
TOPICS = _phrases(
    """capacity planning|the Q3 roadmap|on-call handover|cost review|the API style
guide|incident review|quarterly goals|hiring loop"""
)

# Fact attributes: (name, value maker). Words chosen outside the thesaurus, so freshness queries
# are matched lexically.
ATTRIBUTES: tuple[tuple[str, str], ...] = (
    ("connection pool size", "int:10:200"),
    ("request timeout in milliseconds", "int:100:5000"),
    ("worker count", "int:2:64"),
    ("rate limit per minute", "int:100:20000"),
    ("heap size in megabytes", "int:256:8192"),
    ("primary region", "region"),
    ("runtime version", "version"),
    ("shard count", "int:2:128"),
    ("batch size", "int:16:4096"),
    ("retention period in days", "int:7:400"),
    ("escalation contact", "person"),
    ("latency budget in milliseconds", "int:20:900"),
)

# Decisions that get corrected: (statement, question, value kind).
DECISIONS: tuple[tuple[str, str, str], ...] = (
    ("{s} deploys go out on {v}s", "which day do {s} deploys go out", "weekday"),
    ("the {s} nightly job runs at {v} UTC", "what time does the {s} nightly job run", "time"),
    ("{s} keeps its data in {v}", "which region keeps {s} data", "region"),
    ("the {s} public API version is {v}", "current public API version of {s}", "apiversion"),
    ("the {s} maintenance window is {v}", "when is the {s} maintenance window", "weekday"),
    ("{s} alerts go to {v}", "where do {s} alerts go", "channel"),
    ("the {s} code freeze starts on {v}", "when does the {s} code freeze start", "weekday"),
    ("the {s} load test runs at {v} UTC", "what time is the {s} load test", "time"),
    ("the {s} security review is owned by {v}", "who owns the {s} security review", "person"),
    ("the {s} billing export lands in {v}", "where does the {s} billing export land", "region"),
    ("the {s} canary cohort is {v} percent", "how big is the {s} canary cohort", "int:1:50"),
    ("the {s} release train leaves every {v}", "when does the {s} release train leave", "weekday"),
)


# What an error-code page says the error means.
ERROR_REASONS = _phrases(
    """a request body exceeds the configured limit|an upstream answer is not valid
JSON|the caller's scope does not cover the resource|a write races a schema change|the clock skew
is over five seconds|a shard map is being rebuilt|an idempotency key is reused with a new
body"""
)

# Nonsense words are onset-vowel-coda-vowel-coda, checked against the corpus afterwards.
SYLLABLES = (
    _words("bl br dr fl gl gr kr pl qu sk sn spr str th tr vr z zh"),
    _words("a e i o u oo ai ei"),
    _words("b ck d g k m n nd p rk sh t x zz"),
    _words("a e i o u oo ai ei"),
    _words("b ck d g k m n nd p rk sh t x zz"),
)
