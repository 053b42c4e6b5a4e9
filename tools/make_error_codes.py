"""One-off authoring aid: assemble ``schemas/error_codes.json`` (code, name, retriable, message).

Kafka's error codes are not part of the JSON message specs, so kwire keeps them as its own
data file. Names follow Kafka's ``Errors`` enum (as kio lists them), retriability follows the
client exception classes (kafka-python's flags, corrected by the broker-semantics table), and
messages are the default texts clients show. Run once when upstream adds codes; the generator
reads only the JSON file.
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import kafka.errors as kpy_errors
from kio.schema.errors import ErrorCode as KioErrorCode

# Retriability stated in broker-semantics.md section 0 (read from the Java exception classes).
RETRIABLE_OVERRIDES = {
    1: True, 2: True, 3: True, 5: True, 6: True, 7: True, 13: True, 14: True, 15: True, 16: True,
    51: True, 56: True, 88: True, 89: True, 100: True, 122: True, 123: True, 133: True,
    10: False, 25: False, 47: False, 49: False, 59: False, 90: False, 120: False, 121: False, 124: False,
}
EXTRA_MESSAGES = {
    128: "The regular expression is not valid.",
    129: "Client metadata is stale. The client should rebootstrap to obtain new metadata.",
    130: "The supplied topology is invalid.",
    131: "The supplied topology epoch is invalid.",
    132: "The supplied topology epoch is outdated.",
    133: "The limit of share sessions has been reached.",
}


def main() -> None:
    kpy = {}
    for _, cls in inspect.getmembers(kpy_errors, inspect.isclass):
        if issubclass(cls, kpy_errors.BrokerResponseError) and getattr(cls, "errno", None) is not None:
            kpy[cls.errno] = cls
    rows = []
    for member in sorted(KioErrorCode, key=lambda e: e.value):
        code = int(member.value)
        name = member.name.upper()
        cls = kpy.get(code)
        message = EXTRA_MESSAGES.get(code) or (cls.description if cls else "")
        retriable = RETRIABLE_OVERRIDES.get(code, bool(cls.retriable) if cls else False)
        rows.append({"code": code, "name": name, "retriable": retriable, "message": message})
    out = Path(__file__).resolve().parent.parent / "schemas" / "error_codes.json"
    out.write_text(json.dumps({"source": "Kafka Errors enum (names/codes), client exception classes "
                               "(retriable)", "errors": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
