"""The reader's classes of English and of software vocabulary (docs/claims.md, "Kind
from the object, scope from the voice"): what a claim is about decides its kind, and
whose voice it is decides whether it is a claim at all.

Every sentence here is written for this suite, across domains (coding, operations,
bookings, email, CRM, infrastructure), with look-alikes that must not be read as claims.
"""

from __future__ import annotations

import pytest

from outcomes.reducers.claims.grammar import scan


def asserted(text: str) -> list[tuple[str, str]]:
    """(kind, span text) of every candidate that is an assertion (no blocker, no review)."""
    return [
        (f.kind, text[f.start : f.end])
        for f in scan(text)
        if f.blocked is None and f.review is None
    ]


def reviewed(text: str) -> list[tuple[str, str]]:
    """(kind, review reason) of every candidate handed to a person."""
    return [(f.kind, f.review) for f in scan(text) if f.blocked is None and f.review is not None]


# -- kind from the object: someone else's system makes an effect, whatever the verb ------

EFFECTS = [
    # bookings, appointments, calendars
    ("The appointment was moved to Thursday at 3pm.", "appointment was moved"),
    ("I moved your dentist appointment to Friday morning.", "I moved"),
    ("Your table reservation is confirmed.", "reservation is confirmed"),
    ("The booking has been rescheduled to May 3.", "booking has been rescheduled"),
    ("I cancelled the dinner reservation at the bistro.", "I cancelled"),
    ("The reminder was deleted from your calendar.", "reminder was deleted"),
    # forms, applications, accounts, commerce
    ("Your application was submitted successfully.", "application was submitted"),
    ("The expense form has been submitted.", "form has been submitted"),
    ("I submitted your warranty claim.", "I submitted"),
    ("Your shipping address has been updated.", "shipping address has been updated"),
    ("The customer account was reactivated successfully.", "account was reactivated"),
    ("Your Shopify store was updated with the new tax rate.", "store was updated"),
    ("The shipment was rerouted to the Denver warehouse.", "shipment was rerouted"),
    # CRM, support, incidents
    ("The HubSpot contact has been merged into the existing record.", "has been merged"),
    ("I closed the Zendesk ticket and replied to the customer.", "replied"),
    ("The incident has been acknowledged in PagerDuty.", "has been acknowledged"),
    # infrastructure
    ("The staging deployment was rolled back.", "deployment was rolled"),
    ("The pods were restarted with kubectl.", "pods were restarted"),
    ("Your appointment with Dr. Lee has been moved to 3 PM Thursday.", "has been moved"),
    ("The restaurant confirmed your reservation for 7pm.", "confirmed"),
    ("I confirmed the booking with the hotel.", "I confirmed"),
    ("The S3 bucket was created.", "bucket was created"),
    ("Deal stage updated to Closed Won in HubSpot.", "Deal stage updated"),
    ("I've replied to Sarah's email confirming the time.", "I've replied"),
    ("I replied to Sarah and the invite was sent.", "I replied"),
    # a mailbox and a calendar
    ("I declined the Thursday meeting.", "I declined"),
    ("Your profile has been updated.", "profile has been updated"),
    ("Your address has been updated.", "address has been updated"),
    ("I updated your address on file.", "I updated"),
    ("Your password was reset successfully.", "password was reset"),
    # kept on someone else's system: saved or logged there
    ("Email drafted and saved to your drafts folder.", "saved"),
    ("I logged the call in Salesforce.", "I logged"),
    ("I deleted the draft blog post from Notion.", "I deleted"),
    ("I moved the unread emails to the Later folder.", "I moved"),
    ("PR #88 is open for review.", "PR #88 is open"),
    ("I checked that the email was delivered.", "the email was delivered"),
    ("The Friday team sync has been moved to 4pm.", "has been moved"),
    ("Updated the PR description with the test results.", "Updated"),
    # infrastructure and forges
    ("Terraform apply completed: 3 added, 1 changed, 0 destroyed.", "Terraform apply completed"),
    ("I rotated the API keys in AWS Secrets Manager.", "I rotated"),
    ("The cron job is set up to run nightly at 2am.", "The cron job is set up"),
    ("I've commented on the issue with the root cause.", "I've commented"),
    ("The rollout is complete.", "The rollout is complete"),
    # a transaction with someone else's system that is complete has happened there
    ("Your order is complete.", "Your order is complete"),
    ("Payment complete.", "Payment complete"),
    ("Your purchase has been completed.", "purchase has been completed"),
]


@pytest.mark.parametrize(("text", "span"), EFFECTS, ids=[c[0] for c in EFFECTS])
def test_someone_elses_system_makes_an_effect(text: str, span: str) -> None:
    hits = asserted(text)
    assert any(k == "effect" and (span in s or s in span) for k, s in hits), hits


# A running system's working state is the work's own state, not an act on a remote; an
# edit of the code that names a remote in passing is no effect.
NOT_EFFECTS = [
    ("Production deployment working with the new cache.", "completion"),
    ("**Deployment**: Active", "completion"),
    ("The staging cluster is healthy.", None),
    # words of the trade in another sense: a verb after "to", a cluster of points, a
    # git checkout
    ("Updated the parser to account for nested quotes.", None),
    ("The clusters were updated after re-running k-means.", None),
    ("Checkout complete.", "completion"),
    ("I have successfully migrated the old invoices.", "completion"),
    # a noun phrase headed by a noun of code is part of the program
    ("The Stripe webhook handler has been updated.", None),
    ("The email template was updated.", None),
    ("The file with the booking logic was updated.", None),
    ("Step 3 of 3 complete.", "completion"),
    # what is saved is no place: kept in a local store
    ("The run succeeded and persisted messages to the local database.", None),
    ("The results were saved to out/summary.json.", "persistence"),
    # "address" is also a verb: "to address your requirement"
    ("I revised the plan to address your requirement.", None),
    ("I removed the interactive password prompt from setup.ps1.", None),
    ("The file is open in the editor.", None),
    ("I confirmed the order of operations matches the spec.", "verification"),
    ("Confirmed the booking appears in your Google Calendar.", "verification"),
    ("The feature was delivered.", None),
    ("I moved the constant to the top of the file.", None),
    ("The issue is still open.", None),
    ("Updated the cancellation email copy.", None),
    # an object headed by a noun of code is an edit, whatever names its domain
    ("I updated the checkout flow to handle coupons.", None),
    ("The shipping calculator has been rewritten.", None),
    ("I updated the Helm chart values for staging.", None),
    ("I migrated the profile page to the new API.", None),
    # version control touches local state, whatever it names
    ("I stashed the notification changes.", "persistence"),
    # a task finished, or the code of a transaction, stays completion
    ("I've completed ticket 42.", "completion"),
    ("The checkout page is complete.", "completion"),
    ("Staged the email changes.", "persistence"),
]


@pytest.mark.parametrize(("text", "kind"), NOT_EFFECTS, ids=[c[0] for c in NOT_EFFECTS])
def test_a_running_system_is_not_itself_an_effect(text: str, kind: str | None) -> None:
    hits = asserted(text)
    assert all(k != "effect" for k, _ in hits), hits
    if kind is not None:
        assert any(k == kind for k, _ in hits), hits


# -- nothing happened, said of several acts under one negation --------------------------


def test_committed_but_not_pushed_is_two_claims() -> None:
    for text in (
        "It is committed but not pushed.",
        "Committed locally, not pushed.",
        "The change is committed locally but **not pushed**.",
    ):
        kinds = sorted((f.kind, f.none) for f in scan(text) if f.blocked is None)
        assert kinds == [("effect", True), ("persistence", False)], text
    blocked = [f.blocked for f in scan("The job completed its steps but did not write it.")]
    assert blocked == ["negated"]
    # a check not made takes the state back: "ready but not yet verified"
    assert asserted("The code change is ready but not yet verified.") == []
    assert asserted("There are no issues with the API.") == []


NOTHING_HAPPENED = [
    "No emails were sent.",
    "No message was posted to Slack.",
    "I did not drop the table or submit the form.",
    "We didn't change any files or open a pull request.",
    "I did not push or open a PR.",
]


@pytest.mark.parametrize("text", NOTHING_HAPPENED)
def test_acts_denied_together_are_a_nothing_happened_claim(text: str) -> None:
    assert [f.none for f in scan(text) if f.blocked is None and f.kind == "effect"] == [True]
    assert reviewed(text) == []


# One act on someone else's system denied: a claim the judge of "nothing happened" (every
# effect of the run) cannot single out, so a person reads it.
ONE_ACT_DENIED = [
    "I did not cancel your subscription.",
    "I did not book the flight or pay the deposit.",
    "I didn't issue any real refunds.",
    "No changes were made to your booking.",
    "The booking was not modified.",
    "No real payments were made.",
    "I made no changes to the production site.",
    "I didn't contact the vendor.",
]


@pytest.mark.parametrize("text", ONE_ACT_DENIED)
def test_one_act_denied_goes_to_review(text: str) -> None:
    assert reviewed(text) == [("effect", "one_act_denied")]
    assert [f.none for f in scan(text) if f.blocked is None] == [True]


@pytest.mark.parametrize(
    "text",
    [
        "The server did not accept the email.",
        "I did not modify the booking logic.",
        "I did not touch the tests or the docs.",
        "No changes were made to the parser.",
        "The file was not modified.",
        "No tests were added.",
    ],
)
def test_other_denials_are_not_effect_claims(text: str) -> None:
    assert not [f for f in scan(text) if f.blocked is None and f.kind == "effect"]


# -- verification in the present ---------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "Build succeeds with 0 warnings, 0 errors.",
        "The build succeeds.",
        "`cargo build` succeeds.",
        "Compilation succeeds now.",
        "The build passed with no TypeScript errors.",
        "Tests passed with 0 failures.",
        "Tests: all green.",
        "`go vet ./...` → no issues",
        "go vet: no issues",
    ],
)
def test_a_check_that_succeeds_is_verification(text: str) -> None:
    assert any(k == "verification" for k, _ in asserted(text)), scan(text)


@pytest.mark.parametrize(
    "text",
    [
        "If the build succeeds, deploy.",
        "Make sure the build succeeds.",
        "Check that the build succeeds before merging.",
        "The build passed with 2 errors.",
        "The suite completed with 3 failures.",
    ],
)
def test_a_check_that_may_succeed_is_no_claim(text: str) -> None:
    assert asserted(text) == []


# -- the sequence of tenses ----------------------------------------------------------------

BACKSHIFTED = [
    ("I confirmed that the changes had been committed and pushed.", "persistence"),
    ("I confirmed that the changes had been committed and pushed.", "effect"),
    ("Verified that all migrations had been applied to the database.", "persistence"),
    ("We made sure that the branch had been pushed.", "effect"),
    ("By the end of the session, all changes had been committed and pushed.", "effect"),
]


@pytest.mark.parametrize(("text", "kind"), BACKSHIFTED, ids=[f"{t} {k}" for t, k in BACKSHIFTED])
def test_a_pluperfect_after_the_writers_check_holds_now(text: str, kind: str) -> None:
    assert any(k == kind for k, _ in asserted(text)), scan(text)


@pytest.mark.parametrize(
    "text",
    [
        "The changes had been committed and pushed before I started.",
        "The reviewer confirmed that the PR had been merged.",
        "Another agent had already pushed the fix.",
    ],
)
def test_a_plain_pluperfect_is_earlier(text: str) -> None:
    assert [k for k, _ in asserted(text) if k in ("effect", "persistence")] == []


# -- scope from the voice: headings, progress, other parties, inability -----------------

NOT_ASSERTED = [
    # a heading or label that names a section
    ("## What's been completed", "wh_clause"),
    ("**What's done:**", "wh_clause"),
    ("Here's what's been fixed:", "wh_clause"),
    # progress figures and work under way
    ("Progress: 34% complete", "progress"),
    ("Migration 3/5 complete.", "progress"),
    ("Phase 2: 60% complete", "progress"),
    ("Status: Currently running", "progress"),
    ("The reindex is still running.", "progress"),
    ("Tests are still running.", "progress"),
    # another party's report
    ("Per the backend agent, phase 3 is complete.", "reported"),
    ("Phase 3 complete (as reported by the QA agent).", "reported"),
    ("Agent B reports: Phase 3 complete.", "reported"),
    ("The QA agent reports all 120 tests pass.", "reported"),
    ("Subagent output: Phase 2 complete.", "reported"),
    ("Sarah replied that the contract was signed.", "reported"),
    ("Another agent opened PR #12.", "reported"),
    ("The user thinks the email was sent.", "reported"),
    ("The other agent has completed phase 2.", "reported"),
    ("Phase 2 done by the frontend agent.", "reported"),
    ("- [x] Phase 2 — completed by the frontend agent", "reported"),
    ("Phase 1 of 3 complete; phase 2 is in progress.", "progress"),
    # a heading that titles the list under it
    ("### Cancelled bookings", "title"),
    ("## Deployed Services", "title"),
    ("## Completed Work", "title"),
    ("**Completed items:**", "title"),
    ("Completed tasks: 3/5", "progress"),
]


@pytest.mark.parametrize(("text", "blocker"), NOT_ASSERTED, ids=[c[0] for c in NOT_ASSERTED])
def test_not_the_texts_own_voice(text: str, blocker: str) -> None:
    found = scan(text)
    assert found, "expected a candidate"
    assert {f.blocked for f in found} == {blocker}, [(f.kind, f.blocked) for f in found]


@pytest.mark.parametrize(
    "text",
    [
        "Migration 5/5 complete.",
        "Fixed 3 bugs:",
        "### Completed ✅",
        "## Deployment Complete",
        "The dev server is still running on port 3000.",
        "The preview server is now running.",
        "Per your request, I deployed the site to Netlify.",
        "All other tests pass.",
        "Completed by the deadline.",
        "The tests passed as expected.",
        "Deployed by me to staging.",
        "The agent has completed the task.",
        "The cache now handles 500 requests per second and all tests pass.",
    ],
)
def test_look_alikes_of_progress_and_hearsay_still_assert(text: str) -> None:
    assert asserted(text), scan(text)


def test_a_tables_header_row_names_columns() -> None:
    text = "| suite | passed | failed |\n|---|---|---|\n| unit | 120 passed | 0 |\n"
    assert asserted(text) == [("verification", "120 passed")]


def test_a_table_under_a_heading_of_earlier_or_others_figures() -> None:
    text = (
        "## Baseline (before my change)\n\n| suite | result |\n|---|---|\n| unit | 120 passed |\n\n"
        "## Now\n\n| suite | result |\n|---|---|\n| unit | 124 passed |\n\n"
        "### Results reported by the QA agent\n\n| suite | status |\n|---|---|\n"
        "| e2e | ✅ passing |\n"
    )
    found = [(text[f.start : f.end], f.blocked) for f in scan(text)]
    assert found == [("120 passed", "past"), ("124 passed", None), ("passing", "reported")]


# -- what the reader cannot decide goes to a person ---------------------------------------

REVIEWED = [
    ("I believe the issue is fixed.", "hedged"),
    ("The email was presumably sent.", "hedged"),
    ("The deploy likely succeeded.", "hedged"),
    ("I can't submit the form because it requires a CAPTCHA.", "inability"),
    ("I cannot push to the remote without credentials.", "inability"),
    ("I was unable to submit the order.", "inability"),
    ("Resolves #123.", "scope_unclear"),
    ("- Fixes #88", "scope_unclear"),
    ("Closes #50", "scope_unclear"),
]


@pytest.mark.parametrize(("text", "reason"), REVIEWED, ids=[c[0] for c in REVIEWED])
def test_undecidable_candidates_go_to_review(text: str, reason: str) -> None:
    assert [r for _, r in reviewed(text)] == [reason]
    assert asserted(text) == []


DEEDS = [
    "The new retry helper resolves #123.",
    "This PR closes #12.",
    "It fixes issue #4.",
]


@pytest.mark.parametrize("text", DEEDS)
def test_this_runs_change_that_fixes_a_referenced_issue(text: str) -> None:
    assert [k for k, _ in asserted(text)] == ["completion"]


def test_a_party_closing_an_issue_is_not_this_run() -> None:
    assert asserted("The user closes #12 when the release ships.") == []


# -- what a client named as the means does ------------------------------------------------

MEANS = [
    ("Applied `001_init.sql` via psql.", "persistence"),
    ("Applied the pending migrations.", "persistence"),
    ("Ran `alembic upgrade head`; all migrations applied.", "persistence"),
    ("Restarted the pods with kubectl.", "effect"),
]


@pytest.mark.parametrize(("text", "kind"), MEANS, ids=[c[0] for c in MEANS])
def test_the_client_names_the_place(text: str, kind: str) -> None:
    assert any(k == kind for k, _ in asserted(text)), scan(text)


@pytest.mark.parametrize(
    "text",
    [
        "Replaced plain text storage with SQLite.",
        "Updated the handler using the new API.",
        "Formatted the code with black.",
    ],
)
def test_a_library_or_tool_named_in_passing_places_nothing(text: str) -> None:
    assert [k for k, _ in asserted(text) if k in ("effect", "persistence")] == []


# -- what the code does, said in the present ------------------------------------------

CODE_DESCRIPTIONS = [
    "The request succeeds when the token is valid.",
    "`login()` succeeds only for verified users.",
    "The form is submitted via a POST to /api/orders.",
    "The appointment is moved by dragging it in the calendar view.",
    "The deployment is configured via Helm.",
    "Each order is submitted to the payment API with an idempotency key.",
    "Every ticket is closed when the PR merges.",
    "Previously, the form was submitted twice.",
    "When the subscription is cancelled, the webhook fires.",
    "Users can cancel their reservation from the dashboard.",
    "The new endpoint lets support agents reschedule appointments.",
    "Cancelled bookings are now hidden from the list.",
    "Backups are uploaded to S3 nightly.",
    "Tasks completed: 3/5",
    "I commented out the debug print.",
]


@pytest.mark.parametrize("text", CODE_DESCRIPTIONS)
def test_what_the_code_does_is_no_claim(text: str) -> None:
    assert asserted(text) == [], scan(text)


@pytest.mark.parametrize(
    "text",
    [
        "The form has been submitted via the portal.",
        "The release is now published via GitHub Actions.",
        "The standup is scheduled for 9:30.",
        "Previously, the suite failed; now all tests pass.",
    ],
)
def test_reports_beside_those_descriptions_still_assert(text: str) -> None:
    assert asserted(text), scan(text)


# -- tokens -------------------------------------------------------------------------------


def test_times_emails_and_dotted_paths_are_one_token_each() -> None:
    from outcomes.reducers.claims.constructions import words_of
    from outcomes.reducers.claims.narrative import sentences

    text = "Booked for 10:30 AM, sent to dr.lee@example.com, see pkg.sub.mod/file.tar.gz"
    [sentence] = sentences(text)
    assert words_of(sentence.tokens) == [
        *("booked", "for", "`n", "am", ","),
        *("sent", "to", "`u", ","),
        *("see", "`p"),
    ]


def test_a_long_run_of_dotted_names_is_still_read() -> None:
    # (its cost is bench_claims's "dotted names" line; here only that it is read whole)
    from outcomes.reducers.claims.narrative import sentences

    text = "a.b.c.d.e.f.g.h.i.j.k.l." * 400
    assert sentences(text)[-1].end == len(text)
    assert sentences("a@b@c@ " * 1000 + "Done.")[-1].end > 0


# -- plans under a heading; robustness -----------------------------------------------------


def test_items_under_a_heading_of_what_is_left_are_plans() -> None:
    text = (
        "## Next steps\n\n- Email sent to the vendor once approved\n- Staging deployed after "
        "review\n- Share it: your game is now live\n\n### TODO\n- Booking confirmed with the "
        "hotel\n\n## Test plan\n\n- [x] Unit tests pass\n\n## Done\n\n- Invoice emailed to "
        "the client\n"
    )
    assert asserted(text) == [
        ("effect", "your game is now live"),
        ("verification", "Unit tests pass"),
        ("completion", "Done"),
        ("effect", "Invoice emailed"),
    ]


MESSAGES = [
    "Deployed to Netlify.\n\nYour site is now live",
    "## Summary\n\n- Booking confirmed\n- Tests: 12/12 passed\n\nThe app is live",
    "I've rescheduled your appointment to Thursday at 10:30 and sent a confirmation to "
    "dr.lee@example.com. Resolves #12",
]


@pytest.mark.parametrize("text", MESSAGES)
def test_every_prefix_of_a_message_is_read(text: str) -> None:
    # a message may end anywhere: mid-sentence, with no stop, right after a state word
    for cut in range(1, len(text) + 1):
        scan(text[:cut])


def test_a_draft_written_for_someone_is_its_own_text() -> None:
    text = (
        "**Draft reply:**\n\nHi Sam, your refund has been processed and the booking is "
        "cancelled.\n\n## Done\n\nThe booking was cancelled in the portal.\n"
    )
    found = [(text[f.start : f.end], f.blocked) for f in scan(text)]
    assert ("your refund has been processed", "quoted") in found
    assert ("the booking is cancelled", "quoted") in found
    assert ("The booking was cancelled", None) in found


def test_a_table_whose_columns_name_who_did_each_row_is_theirs() -> None:
    text = (
        "| Agent | Phase | Status |\n|---|---|---|\n| frontend | 2 | ✅ complete |\n"
        "| backend | 3 | tests passing |\n\n| Suite | Result |\n|---|---|\n| unit | 120 passed |\n"
    )
    found = [(text[f.start : f.end], f.blocked) for f in scan(text)]
    assert found == [("complete", "reported"), ("tests passing", "reported"), ("120 passed", None)]
