"""Text that comes in from outside or goes out to a user: decoded, escaped, scrubbed. Pure
functions of strings and bytes (and the registry of this process's secrets), importing nothing
else of the harness.

    encodings.py      which Unicode encoding a file a user gave is in, when it is not UTF-8
    control_chars.py  control characters refused where they would change a request, shown
                      escaped everywhere else
    scrub.py          credentials out of everything harness prints or writes

This face imports nothing.
"""
