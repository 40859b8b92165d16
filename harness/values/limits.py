"""The upper bound of every duration and count a user gives, in harness.toml or on the command
line: a value past one is a typo (1e308 seconds, 1e11 repeats), refused at once with the bound
named, rather than overflowing a clock deep in a run or running for a lifetime. No imports, so
the CLI's option checks load nothing else.
"""

MAX_SECONDS = 86_400.0
"""The longest any timeout may be (1 day); past about 1e9 seconds the clocks and selectors the
harness waits with overflow."""
MAX_REPEATS = 1000  # compare.repeats and --repeats
MAX_LIMIT = 10_000  # query.limit and every k: results a query asks for, the cutoffs scored
MAX_COUNT = 1_000_000_000  # tolerated errors or unknown ids: more than any gold set holds
MAX_BYTES = 1 << 30  # query.max_bytes: 1 GiB per answer
MAX_WARMUP = 1000  # query.warmup: queries sent before measuring
MAX_BATCH = 100_000  # service.load.batch: documents per request
MAX_SEED = (1 << 63) - 1  # a 64-bit seed, what numpy and every log show whole
MAX_CONCURRENCY = 1024  # --concurrency: queries in flight
MAX_LOG_BYTES = 1 << 40  # service.max_log_bytes: the log tail kept per boot or build (1 TiB)
MAX_PROCESSES = 4_194_304  # service.max_processes: the kernel's own pid_max ceiling
MAX_FOLDER_BYTES = 1 << 40  # service.max_folder_bytes: each writable folder of a boot (1 TiB)
