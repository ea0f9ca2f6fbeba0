"""The bad-input corpus again, on PostgreSQL (which rejects NaN in JSON and integers past bigint that SQLite
stores): the same tests, run by the integration stage."""

import pytest

from tests.test_bad_input_corpus import *  # noqa: F403

pytestmark = pytest.mark.integration
