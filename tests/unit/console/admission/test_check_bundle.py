"""`check_bundle`: the uploaded bundle is inspected as hostile, within the console's size and member limits (the
inspection itself has its own tests in tests/unit/bundle; here: what the check passes on and which limits it uses)."""

from __future__ import annotations

from starforge.console.services.admission.checks import check_bundle

from ...bundle.craft import Entry, craft, gz
from .contexts import context, triples

PATHS_HINT = "Rebuild the bundle with `sf submit`: members are relative POSIX paths inside the bundle."
CLEAN = gz(craft([Entry("experiments/toy/config.yaml", b"a: 1\n"), Entry("experiments/toy/run.sh", b"echo\n")]))


def test_a_request_without_a_bundle_passes() -> None:
    assert check_bundle(context(bundle=None)) == []


def test_a_clean_bundle_within_the_limits_passes() -> None:
    assert check_bundle(context(bundle=CLEAN)) == []
    at_the_limits = context(bundle=CLEAN, settings__max_bundle_files=2, settings__max_bundle_bytes=len(CLEAN))
    assert check_bundle(at_the_limits) == []


def test_members_leaving_the_bundle_are_refused() -> None:
    problems = check_bundle(context(bundle=gz(craft([Entry("../escape", b"x"), Entry("/etc/abs", b"y")]))))
    assert triples(problems) == [("bundle", "bundle_unsafe", PATHS_HINT)] * 2
    assert [p.message for p in problems] == ['member "../escape" has a ".." component',
                                             'member "/etc/abs" is an absolute path']


def test_a_body_that_is_no_gzip_tar_is_refused() -> None:
    [problem] = check_bundle(context(bundle=b"not gzip"))
    assert triples([problem]) == [("bundle", "bundle_unsafe",
                                   "Send the bundle as `sf submit` builds it: a complete gzip-compressed tar archive.")]


def test_the_console_s_member_limit_applies() -> None:
    [problem] = check_bundle(context(bundle=CLEAN, settings__max_bundle_files=1))
    assert triples([problem]) == [("bundle", "bundle_too_large", "Bundle fewer files: keep data and outputs out of "
                                   "<exp>/, common/ and configs/ (or git-ignore them).")]
    assert problem.message == "the bundle has more than 1 members"


def test_the_console_s_size_limit_applies() -> None:
    [problem] = check_bundle(context(bundle=CLEAN, settings__max_bundle_bytes=len(CLEAN) - 1))
    assert triples([problem]) == [("bundle", "bundle_too_large", "Keep large or generated files out of the bundle: "
                                   "register them as a dataset or volume instead.")]
    assert problem.message == f"the bundle is larger than {len(CLEAN) - 1} compressed bytes"
