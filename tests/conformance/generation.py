"""Hypothesis settings shared by the generated-input tests.

Hypothesis derandomizes under CI (its "ci" profile): these tests opt out, so
every run, CI's included, compares new cases. A failure prints its inputs and
Hypothesis's reproduction blob.
"""

from hypothesis import HealthCheck, settings


def generated(examples: int) -> settings:
    return settings(
        max_examples=examples,
        deadline=None,
        derandomize=False,
        print_blob=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
