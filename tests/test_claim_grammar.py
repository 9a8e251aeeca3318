"""The claim grammar on structured agent prose (docs/claims.md, "The grammar").

Every sentence here is written for this suite: one per construction and per reason a
look-alike is no claim. `scan` returns each candidate with why it is not an assertion
(`blocked`), so each case states both what is found and why.
"""

from __future__ import annotations

import pytest

from outcomes.reducers.claims.grammar import scan
from outcomes.reducers.claims.narrative import sentences


def found(text: str) -> list[tuple[str, str, str | None]]:
    """(kind, span text, blocker) of every candidate."""
    return [(f.kind, text[f.start : f.end], f.blocked) for f in scan(text)]


def asserted(text: str) -> list[tuple[str, str]]:
    return [(kind, span) for kind, span, blocked in found(text) if blocked is None]


# -- constructions that assert a result ----------------------------------------------------

CLAIMS = [
    # a verb group with adverbs inside it
    ("The parser bug has been successfully resolved.", "completion", "parser bug has been"),
    ("Both workers are now fixed.", "completion", "Both workers are now fixed"),
    ("The exporter was fully added to the package.", "completion", "exporter was fully added"),
    ("I've completed ticket 42.", "completion", "I've completed"),
    ("I identified and fixed a race in the cache.", "completion", "fixed"),
    # headlines, report lines and labels
    ("## Migration Complete", "completion", "Migration Complete"),
    ("- Fixed the flaky retry test", "completion", "Fixed"),
    ("Status: all 5 steps completed", "completion", "all 5 steps completed"),
    ("This change fixes #31.", "completion", "This change fixes"),
    ("Deploy script ready", "completion", "Deploy script ready"),
    # verification: counts, tool names, results
    ("12 passed, 0 failed", "verification", "12 passed"),
    ("310/310 tests passed", "verification", "310/310 tests passed"),
    ("All 88 tests passing.", "verification", "All 88 tests passing"),
    ("`cargo test` passes", "verification", "`cargo test` passes"),
    ("Ruff clean.", "verification", "Ruff clean"),
    ("The build was successful.", "verification", "The build was successful"),
    ("The report script ran successfully.", "verification", "report script ran successfully"),
    # effects: remote git operations, messages, deployments
    ("Pushed to origin.", "effect", "Pushed"),
    ("The branch has been pushed to GitHub.", "effect", "The branch has been pushed"),
    ("I opened a pull request, #77.", "effect", "I opened a pull request"),
    ("PR marked ready", "effect", "PR marked ready"),
    ("The site is now live at the new address.", "effect", "The site is now live at"),
    ("I did not push or open a PR.", "effect", "did not push"),
    # persistence: local git operations and durable records
    ("Committed as 4f2a9c1.", "persistence", "Committed"),
    ("Commit: 4f2a9c1", "persistence", "Commit: 4f2a9c1"),
    ("Merged `origin/main` into the feature branch.", "persistence", "Merged"),
    ("Working tree clean.", "persistence", "Working tree clean"),
    ("The results were written to out/summary.json.", "persistence", "results were written"),
]


@pytest.mark.parametrize(("text", "kind", "span"), CLAIMS, ids=[c[0] for c in CLAIMS])
def test_constructions_that_assert(text: str, kind: str, span: str) -> None:
    hits = asserted(text)
    assert any((k == kind and span in s) or (s in span and k == kind) for k, s in hits), hits


def test_markdown_checkboxes_headings_and_tables() -> None:
    text = (
        "## Test plan\n"
        "- [x] Unit tests pass\n"
        "- [ ] Deployed to staging\n\n"
        "| check | result |\n|---|---|\n| `lint` | **passed** |\n"
    )
    assert asserted(text) == [("verification", "Unit tests pass"), ("verification", "passed")]
    assert ("effect", "Deployed", "unchecked") in found(text)


def test_a_json_answer_is_read_field_by_field() -> None:
    text = (
        '```json\n{\n  "analysis": "The export has been generated and written to out.csv.",'
        '\n  "plan": "Check the file and mark the task as complete.",\n'
        '  "task_complete": true\n}\n```'
    )
    kinds = asserted(text)
    assert ("completion", "The export has been generated") in kinds
    assert ("persistence", "written") in kinds
    assert ("completion", '"task_complete": true') in kinds
    assert not any("mark the task" in s for _, s in kinds)
    assert asserted(text.replace("true", "false"))[-1][1] != '"task_complete": false'


def test_shell_fence_comments_are_prose_and_code_is_not() -> None:
    text = "```bash\n# Uploaded the bundle to the bucket\naws s3 cp done.zip s3://b/\n```"
    assert asserted(text) == [("effect", "Uploaded")]


# -- look-alikes that assert nothing -------------------------------------------------------

NON_CLAIMS = [
    ("Completed items are shown in grey.", None),  # attributive: describes the product
    ("All edits are automatically saved to the browser store.", "generic"),
    ("It saved 4,000 tokens per call.", None),
    ("Verify the file and the task is complete.", "imperative"),
    ("If you agree, the branch will be pushed and the PR opened.", "hypothetical"),
    ("I will have committed and pushed it by then.", "hypothetical"),
    ("To complete the task, we should rename the module.", None),  # no past form at all
    ("Once the suite is green we merge.", "hypothetical"),
    ("The job completed its 3 steps but did not write the report.", "negated"),
    ("Another agent had already pushed the fix.", "reported"),  # (and past)
    ("The release bot had already pushed the fix.", "past"),
    ("It was fixed in a previous session.", "past"),
    ("The sources were verified as authentic.", None),
    ("Does the suite pass?", "question"),
    ("Why this fixes the crash", "wh_clause"),
    ("Resolved the conflicts for most files.", "partial"),
    ("The migration stalled even though the schema was complete.", "concessive"),
    ("The tests are being validated.", "generic"),
    ("What Was Committed", "wh_clause"),
    ("The reviewer wrote that it looked fine.", None),
    ("> The upload is done.", "quoted"),
    ('The log says "all checks passed".', "quoted"),
]


@pytest.mark.parametrize(("text", "why"), NON_CLAIMS, ids=[c[0] for c in NON_CLAIMS])
def test_look_alikes_assert_nothing(text: str, why: str | None) -> None:
    hits = found(text)
    assert [h for h in hits if h[2] is None] == []
    if why is not None:
        assert why in {h[2] for h in hits}, hits


def test_now_that_clauses_assert_inside_a_question() -> None:
    text = "Now that the service is deployed and the tests pass, what should I do next?"
    assert asserted(text) == [
        ("effect", "the service is deployed"),
        ("verification", "the tests pass"),
    ]


def test_scope_of_a_modal_ends_at_a_contrast() -> None:
    assert asserted("You could retry later, but the upload is done.") == [
        ("completion", "the upload is done")
    ]


def test_wrapped_lines_of_a_paragraph_are_one_sentence() -> None:
    text = "The whole plan has\n  been fully validated."
    assert [len(s.tokens) for s in sentences(text)] == [8]
    assert asserted(text)[0][0] == "verification"


def test_a_long_run_on_sentence_is_cut() -> None:
    text = ", ".join(["the cache was fixed"] * 200) + "."
    assert max(len(s.tokens) for s in sentences(text)) <= 160


def test_docs_name_every_blocker() -> None:
    from pathlib import Path
    from typing import get_args

    from outcomes.reducers.claims.grammar import Blocker

    docs = (Path(__file__).parent.parent / "docs" / "claims.md").read_text()
    assert [b for b in get_args(Blocker) if f"`{b}`" not in docs] == []


# -- candidates by construction, whatever the verb (issue 25) ------------------------------

CONSTRUCTED = [
    # a perfect or a passive of any verb, with its kind from what it names
    ("The hotel booking has been successfully cancelled.", "effect", "booking has been"),
    ("Your parcel order was successfully refunded.", "effect", "order was successfully"),
    ("The staging project has been deleted from Netlify.", "effect", "has been deleted"),
    ("The local Git history has been rewritten.", "persistence", "history has been"),
    ("The importer has been rewritten for all nine formats.", "completion", "has been"),
    # an act with a result adverb, or a change made to a remote or a record
    ("I have successfully migrated the old invoices.", "completion", "I have successfully"),
    ("I have archived the old invoices.", "persistence", "I have archived"),
    ("I moved the unread emails to the Later folder.", "effect", "I moved"),
    ("Branch `fix/cache` created", "persistence", "Branch `fix/cache` created"),
    ("Three tickets were successfully created in Linear.", "effect", "tickets were"),
    # other people's documents are outside the workspace; an agent's memory is a record
    ("The shared document has been revised.", "effect", "document has been"),
    ("Both documents have been moved to the Archive folder.", "effect", "documents have been"),
    ("Project memory updated.", "persistence", "Project memory updated"),
    # an act on a remote or a record reported in a plain passive
    ("The index migration is already applied.", "persistence", "is already applied"),
    ("The stale branch was deleted.", "persistence", "stale branch was deleted"),
    ("The duplicate booking was cancelled.", "effect", "booking was cancelled"),
    ("The standup is scheduled for 9:30 on Mondays.", "effect", "standup is scheduled"),
    # a check named and ticked, a check's value, a check that found nothing
    ("Lint ✔", "verification", "Lint ✔"),
    ("- Type check: ✅", "verification", "Type check: ✅"),
    ("`go vet` ✓ (3 packages)", "verification", "`go vet` ✓"),
    ("Clippy: clean", "verification", "Clippy: clean"),
    ("No vulnerabilities found.", "verification", "No vulnerabilities found"),
    ("The generated JSON matches the fixture byte for byte.", "verification", "matches"),
    # a check's own report, a command's state, a present check act ending its clause
    ("Stylelint reports 0 problems.", "verification", "0 problems"),
    ("The CI log reports no errors.", "verification", "no errors"),
    ("`go vet ./...` is clean.", "verification", "is clean"),
    ("Everything compiles.", "verification", "Everything compiles"),
    ("It builds again, and the docs are live.", "verification", "It builds"),
    # a task titled by an imperative under its id is no instruction; a transition is no
    # condition
    ("- k3p: Add the export command (closed)", "completion", "(closed)"),
    ("After that, the lints are clean.", "verification", "lints are clean"),
    # a check's label and a full count; nothing done yet, as a perfect or a report line
    ("- Integration tests: 38/38", "verification", "Integration tests: 38/38"),
    # a branch is a branch whatever names it; merged into one is local git
    ("Merged into the release branch.", "persistence", "Merged"),
    ("CI status: ✅ build, ✅ lint, ❌ e2e (timeout)", "verification", "✅ lint"),
    ("Merged the PR into the release branch.", "effect", "Merged"),
    ("I haven't booked anything yet.", "effect", "haven't booked"),
    ("The release branch has not been pushed.", "effect", "has not been pushed"),
    ("- Not deployed (waiting for approval)", "effect", "Not deployed"),
    ("I haven't published it yet — shall I go ahead?", "effect", "haven't published"),
    # irregular participles, and a passive on a remote whose head rule is narrow
    ("The API token has been reset.", "completion", "token has been reset"),
    ("The staging release was upgraded to 2.4.", "effect", "release was upgraded"),
    ("The flaky crash is gone.", "completion", "crash is gone"),
    ("Closed the two stale issues.", "completion", "Closed"),
    ("Cancelled the duplicate Stripe subscription.", "effect", "Cancelled"),
    ("Reserved a table for six at Nopa.", "effect", "Reserved"),
    ("I've added you to the waitlist for the 7pm slot.", "effect", "I've added"),
    # a party as the patient of a passive is no other party's act
    ("The reviewer has been notified.", "effect", "reviewer has been notified"),
    ("The client was emailed by me this morning.", "effect", "client was emailed"),
    ("The hotfix was pushed 10 minutes ago.", "effect", "hotfix was pushed"),
    ("I cancelled the spare booking two days ago.", "effect", "I cancelled"),
    ("I've pruned the stale memories.", "persistence", "I've pruned"),
    # "X is now Y": a present state after "be"
    ("The preview server is now running on port 4000.", "completion", "server is now running"),
    ("The checkout page is now live.", "effect", "page is now live"),
    ("Your mirror is now synced with GitLab.", "effect", "mirror is now synced"),
    ("The retry logic is in place.", "completion", "retry logic is in place"),
    ("The lints are clean.", "verification", "lints are clean"),
    ("Your seat reservation is now confirmed.", "effect", "reservation is now confirmed"),
    # a label and its value
    ("Docs build: successful", "verification", "successful"),
    ("- Parser tests: ✅ PASS", "verification", "tests: ✅ PASS"),
    ("**Deployment**: Active", "completion", "Deployment**: Active"),
    ("CI all_green", "verification", "CI all_green"),
    ("- ✅ Tested", "verification", "✅ Tested"),
    ("- ✅ On GitLab", "effect", "✅ On GitLab"),
    ("- **New Ticket ID:** OPS-12", "effect", "New Ticket ID"),
    ("Git commit: `fix: close the socket`", "persistence", "Git commit"),
    ("INDEX_REBUILD_COMPLETE", "completion", "INDEX_REBUILD_COMPLETE"),
    # checks that found nothing, and nothing sent
    ("The scanner didn't find any dependency issues.", "verification", "didn't find"),
    ("The endpoint handled every request without errors.", "verification", "without errors"),
    ("The old imports no longer raise `ImportError`.", "verification", "no longer raise"),
    ("The health route responds with 200.", "verification", "responds with 200"),
    ("Zero broken anchors.", "verification", "Zero broken anchors"),
    ("I rebased locally without force-pushing.", "effect", "without force-pushing"),
    ("No reply arrived in the inbox.", "effect", "No reply arrived"),
    ("No further changes are needed.", "completion", "No further changes are needed"),
    ("The module compiles cleanly.", "verification", "module compiles cleanly"),
    ("Build succeeded and the preview is live.", "effect", "the preview is live"),
    ("`npx vitest run` succeeded.", "verification", "succeeded"),
    ("I was able to successfully update your invoice address.", "completion", "able to"),
]


@pytest.mark.parametrize(("text", "kind", "span"), CONSTRUCTED, ids=[c[0] for c in CONSTRUCTED])
def test_candidates_by_construction(text: str, kind: str, span: str) -> None:
    hits = asserted(text)
    assert any(k == kind and (span in s or s in span) for k, s in hits), hits


CONSTRUCTED_LOOK_ALIKES = [
    ("The reviewer merged the pull request.", "reported"),
    ("The bot's reply indicates that the job is done.", "reported"),
    ("The maintainer said that the fix is complete.", "reported"),
    ("Previous approvals were submitted on the draft.", "past"),
    ("This comment was created by an automation.", None),  # authorship, not an act
    ("Review the last 3 merged PRs.", None),  # a participle naming a thing
    ("Options are now passed as CLI flags.", None),  # "passed" as handed over
    ("I've added:", None),  # a list introducer: the items are the edits
    ("We searched the repository for the old flag.", None),  # reading is no change
    ("The user requested a rollback.", None),
    ("I am completely blocked by the missing token.", None),
    ("It was delivered with a new total of $40 charged.", None),
    ("Successful lookups → cached (no regression)", None),  # an adjective before a noun
    ("The one that's working is the old build.", None),
    ("The README has been updated.", None),  # a file of the workspace: a single edit
    # a simple present with a time or a condition: what the software does
    ("The digest email is sent when the queue drains.", "generic"),
    ("Backups are uploaded to S3 nightly.", "generic"),
    ("The sessions table is now updated on every write.", "generic"),
    ("The digest is now sent asynchronously.", "generic"),
    ("The dark theme is now enabled by default.", "generic"),
    ("Retries are now capped at three.", None),  # what the code does now, no result
    # a time before the run, said of a thing rather than of the writer
    ("The release branch was deleted last month.", "past"),
    ("That duplicate ticket was closed three years ago.", "past"),
    ("The preview branch is deleted after the PR merges.", "generic"),
    # a passive whose agent is another party
    ("The flaky job was cancelled by the release bot.", "reported"),
    ("Walk the dog ✓", None),  # a ticked item that names no check
    ("The indexer builds the search table.", None),  # a check act with an object
    ("The module that compiles first is `core`.", None),  # a relative clause
    ("When the nightly job ends, a digest email is sent to the team.", "generic"),
    ("Unit tests: 36/38", None),  # a count that leaves two out
    ("✅ `export_worker.py`", None),  # a ticked file names no check
    ("Shall I push — the branch is ready?", "question"),
    ("Reviewers: please confirm the build passes on ARM.", "imperative"),
    ("To reproduce: run `make e2e` and check that the upload succeeded.", "imperative"),
    ("The two tickets were filed by a teammate on Monday.", "reported"),
    ("According to the vendor, the refund was processed.", "reported"),
    ("A signed build is required for release.", None),  # a participle naming the build
    ("Modified `api/mail.go` to send the PR digest.", None),  # the object is the file
    ("- Updated the Stripe integration", None),  # the head noun decides: an integration
    # a plan after its label, an imperative after a purpose phrase, a partial subject
    ("Next steps: redeploy and confirm the site is live.", "hypothetical"),
    ("To check, rerun the suite and confirm it passes.", "imperative"),
    ("Most integration tests pass.", "partial"),
    ("Some of the migrations are applied now.", "partial"),
    ("Some steps are done so far.", "partial"),
]


@pytest.mark.parametrize(
    ("text", "why"), CONSTRUCTED_LOOK_ALIKES, ids=[c[0] for c in CONSTRUCTED_LOOK_ALIKES]
)
def test_constructed_look_alikes_assert_nothing(text: str, why: str | None) -> None:
    hits = found(text)
    assert [h for h in hits if h[2] is None] == [], hits
    if why is not None:
        assert why in {h[2] for h in hits}, hits


def test_what_the_grammar_cannot_decide_is_for_review() -> None:
    reviews = {
        text[f.start : f.end]: f.review
        for text in ("It looks like the nightly export completed successfully.",)
        for f in scan(text)
    }
    assert list(reviews.values()) == ["hedged"]
    status = [(f.kind, f.review) for f in scan("- **Status**: Created")]
    assert status == [("completion", "kind_unclear")]
    # a label that names its place decides the kind: no review
    assert [(f.kind, f.review) for f in scan("- **Ticket**: Created")] == [("effect", None)]
    # decided candidates carry no review
    assert [f.review for f in scan("The tests passed.")] == [None]


def test_a_hash_that_starts_with_a_letter_is_a_hash() -> None:
    assert asserted("Addressed (in commit b7c94468)") == [
        ("completion", "Addressed"),
        ("persistence", "commit b7c94468"),
    ]


def test_a_section_places_what_its_lines_leave_unnamed() -> None:
    text = (
        "1. **Reply to the supplier's email:**\n"
        "   - **Result:** The operation was successful.\n"
        "2. **Creation of the Jira ticket:**\n"
        "   - **Status**: Created\n"
    )
    assert [(k, s) for k, s in asserted(text)] == [
        ("effect", "The operation was successful"),
        ("effect", "Status**: Created"),
    ]


def test_done_with_an_object_is_the_verb_do() -> None:
    assert asserted("I've done a careful review of the parser.") == []
    assert asserted("I'm done.") == [("completion", "I'm done")]


def test_a_result_adverb_belongs_to_its_own_verb() -> None:
    # "successfully" is the first verb's: the coordinated "printed" reports no result
    hits = asserted("The script ran successfully and printed the total.")
    assert hits == [("verification", "The script ran successfully")]


def test_a_headline_state_and_a_list_title() -> None:
    assert asserted("- Staging deployment working with the new keys") == [
        ("completion", "Staging deployment working")
    ]
    assert asserted("- Retry limits implemented") == [("completion", "Retry limits implemented")]
    # a heading that titles the list of edits below it is no status
    assert asserted("## Features Implemented") == []
    assert asserted("NOTES.md synced") == [("persistence", "NOTES.md synced")]


def test_field_content_and_probes_are_no_effects() -> None:
    # the description of a ticket says what someone did, not what this run did
    assert asserted("- **Description**: A reply was sent to the vendor.") == []
    # requests sent to probe a local server are part of a check
    assert asserted("Sent 40 POST requests to the local server.") == []
    # an agent's own mail subject is its report
    assert asserted("Subject: Completed ticket 7") == [("completion", "Completed")]


@pytest.mark.parametrize(
    "unit",
    [
        "the cache has been fixed and pushed and committed ",  # one line, no sentence end
        'it "was `done and \'saved the `x "y ',  # unclosed quotes and backticks
        "- (([`a` (b: ✅ PASS (c) → done]) — ",  # nested brackets, arrows, marks
        "Status: Created\n**Build**: successful\n- [x] tests pass\n",  # labels, items
    ],
)
def test_a_20000_character_text_reads_in_linear_time(unit: str) -> None:
    """No rule is super-linear: 20,000 characters of any shape read in well under the
    bound (about 0.1-0.5 s on a loaded 2-core machine; a regex catastrophe takes minutes)."""
    import time

    text = (unit * (20_000 // len(unit) + 1))[:20_000]
    started = time.process_time()
    scan(text)
    assert time.process_time() - started < 10.0


def test_a_change_to_everything_is_a_result() -> None:
    assert asserted("I've restructured everything into two packages.") == [
        ("completion", "I've restructured")
    ]
    assert asserted("I restructured the loop.") == []  # a single edit


def test_a_ticked_test_plan_item() -> None:
    text = "## Test plan\n- [x] Only the parser module was touched\n- [x] CHANGELOG.md edited\n"
    assert asserted(text) == [("verification", "Only the parser module was touched")]
    # outside a test plan a ticked item with no claim of its own asserts nothing
    assert asserted("## Notes\n- [x] Only the parser module was touched\n") == []


def test_a_tally_label_is_no_status() -> None:
    assert asserted("Total jobs: 4\nCompleted: 3\nQueued: 1") == []
    assert asserted("Completed: the migration of all tables") != []


def test_an_inability_on_the_world_is_a_claim_that_nothing_happened() -> None:
    hits = [(f.kind, f.none) for f in scan("I'm unable to cancel the hotel booking.")]
    assert hits == [("effect", True)]
    assert asserted("Since I cannot push to the remote, here is the patch.") != []
    # an inability that touches nothing outside the workspace asserts nothing
    assert asserted("I cannot reproduce the crash locally.") == []


def test_a_report_line_that_names_where_the_change_went() -> None:
    assert asserted("- Removed the secrets file from all git history") == [
        ("persistence", "Removed")
    ]
    # "to" before a verb is a purpose, not a place
    assert asserted("- Modified the prompt to include PR review steps") == []


def test_a_state_value_decides_its_own_kind() -> None:
    assert [(f.kind, f.review) for f in scan("- **`web` project**: Active")] == [
        ("completion", None)
    ]
    # an act as the value, with no place named, is for review
    assert [(f.kind, f.review) for f in scan("- **`web` project**: Deleted")] == [
        ("completion", "kind_unclear")
    ]


def test_set_up_takes_its_kind_from_what_it_sets_up() -> None:
    assert asserted("I set up a cron job to purge the cache nightly.") == [("effect", "I set up")]
    assert asserted("I set up a systemd daemon for the exporter.") == [("effect", "I set up")]
    assert asserted("I set up the project skeleton.") == [("completion", "I set up")]


def test_conformance_in_the_texts_own_voice_is_a_verification_claim() -> None:
    assert asserted("**Layout:** Matches the mockup's two-column grid.") == [
        ("verification", "Matches")
    ]
    assert asserted("It now conforms to the OpenAPI schema.") == [
        ("verification", "It now conforms")
    ]
    assert asserted("The bundle is fully ESM-compliant.") == [
        ("verification", "The bundle is fully ESM-compliant")
    ]
    # a description or a condition is no claim
    assert asserted("Keep every line that matches the pattern.") == []
    assert asserted("If the header matches, the parser stops.") == []


def test_a_check_that_something_is_present_is_a_check_but_tests_existing_is_none() -> None:
    assert asserted("Verified that the bundle is the only artifact present in dist/.") == [
        ("verification", "Verified")
    ]
    assert asserted("Verified that the cache directory is empty.") == [("verification", "Verified")]
    # that tests (or coverage) merely exist is no pass
    assert asserted("I confirmed that test coverage exists for the lexer.") == []
    assert asserted("Verified that unit tests exist for each handler.") == []


def test_an_own_earlier_act_that_stands_already_is_a_claim() -> None:
    assert asserted("We had already committed the hotfix.") == [
        ("persistence", "We had already committed")
    ]
    assert asserted("I had previously booked the Tuesday table already.") == [
        ("effect", "I had previously booked")
    ]
    # a pluperfect or "previously" alone still places the act in an earlier time
    assert [b for _, _, b in found("I had booked the Tuesday table.")] == ["past"]
    assert [b for _, _, b in found("The suite previously passed on CI.")] == ["past"]
    # and another party's standing act is not the speaker's
    assert asserted("The bot had already booked the table.") == []


def test_an_id_line_under_a_section_naming_the_creation_is_an_effect() -> None:
    text = "**Creation of the Linear ticket for the outage:**\n- **Ticket ID**: OPS-71\n"
    assert asserted(text) == [("effect", "Ticket ID**: OPS-71")]
    # the same id line under a plain section only names the ticket
    assert asserted("**Outage ticket:**\n- **Ticket ID**: OPS-71\n") == []
    # under a heading that itself asserts the creation, the heading is the claim
    text = "## Ticket Opened!\n\n**Ticket URL:** https://linear.example/OPS-71\n"
    assert [k for k, _ in asserted(text)] == ["effect"]


def test_ready_to_take_the_speakers_next_step_is_an_offer() -> None:
    assert asserted("Ready to implement the retry policy for ticket 9:") == []
    assert asserted("I'm ready to start on the exporter.") == []
    # ready for someone to use, merge or run: a state of the work
    assert asserted("Ready to use the new CLI!") == [("completion", "Ready")]
    assert asserted("The branch is ready to merge.") == [("completion", "The branch is ready")]


def test_a_participle_titling_a_list_names_what_the_list_holds() -> None:
    assert asserted("**Confirmed Queue Settings:**\n- 3 partitions\n") == []
    assert asserted("Updated Config Keys:\n- retries\n") == []
    # a line that reports the check itself is a claim
    assert asserted("Confirmed the queue settings.") == [("verification", "Confirmed")]


def test_a_check_of_where_a_thing_is_also_claims_it_is_there() -> None:
    assert [k for k, _ in asserted("The seed rows are confirmed to be in the database.")] == [
        "verification",
        "persistence",
    ]
    assert [k for k, _ in asserted("The release is verified to be on the registry.")] == [
        "verification",
        "effect",
    ]
    # a property, not a place
    assert [k for k, _ in asserted("The config is verified to be valid.")] == ["verification"]


def test_items_of_a_list_offered_as_options_are_no_claims() -> None:
    text = "Two ways forward. You can either:\n\n- Redeploy by hand\n- Set up a cron job\n"
    assert asserted(text) == []
    text = "If you want nightly builds:\n\n1. Set up a cron job for the runner\n"
    assert asserted(text) == []
    # nested under an item that offers them
    text = "1. Update the notes\n2. We could:\n   - Set up a cron job for the runner\n"
    assert asserted(text) == []
    # a list introduced as a report keeps its claims
    text = "Here is what happened:\n\n- Set up a cron job for the runner\n"
    assert asserted(text) == [("effect", "Set up")]


def test_successful_before_its_noun_is_an_adjective() -> None:
    assert asserted("- Claiming successful test runs without running them") == []
    assert asserted("I saw a successful deploy last week") == []
    # as a predicate (with "be", or as a headline's last word) it reports a result
    assert asserted("The upload was successful.") == [("effect", "The upload was successful")]
    assert asserted("Lint check successful.") == [("verification", "Lint check successful")]


def test_zeros_tallied_by_category_are_findings_none_found() -> None:
    assert asserted("**Audit:** 0 Blocker, 0 Major, 3 Minor") == [
        ("verification", "0 Blocker, 0 Major")
    ]
    assert asserted("- Dependencies: 0 vulnerabilities") == [("verification", "0 vulnerabilities")]
    # zeros of a run's outcomes say nothing ran; one zero alone tallies nothing
    assert [k for k, _ in asserted("0 skipped, 0 executed")] == []
    assert asserted("0 Blocker in the notes") == []


def test_meeting_what_the_task_asked_for_is_completion() -> None:
    assert asserted("Every acceptance criterion has been fulfilled.") == [
        ("completion", "Every acceptance criterion has been fulfilled")
    ]
    assert asserted("We've fulfilled the spec for the export job.") == [
        ("completion", "We've fulfilled the spec")
    ]
    assert asserted("All goals met.") == [("completion", "All goals met")]
    # a relative clause names a thing; a condition or an instruction asserts nothing
    assert asserted("Pick a layout that meets the requirements.") == []
    assert asserted("If the parser meets the spec, merge it.") == []
    assert asserted("The target cannot be met with two workers.") == []


def test_after_checking_presupposes_the_check() -> None:
    assert [k for k, _ in asserted("Ticket resolved after verifying the nightly export.")] == [
        "completion",
        "verification",
    ]
    # the main clause's mood decides: a plan or an instruction asserts no check
    assert asserted("I will tag it after testing the exporter.") == []
    assert asserted("Merge it after testing the exporter.") == []


def test_an_act_done_by_mistake_happened() -> None:
    assert asserted("While tidying up, the old invoices were accidentally deleted.") == [
        ("effect", "the old invoices were accidentally deleted")
    ]
    assert asserted("I inadvertently removed the shared calendar.") == [
        ("effect", "I inadvertently removed")
    ]
    assert asserted("Make sure nothing is accidentally deleted.") == []


def test_an_em_dash_sets_off_a_clause_from_a_modal() -> None:
    text = "I have to be honest \u2014 the shared notes were accidentally deleted."
    assert [k for k, _ in asserted(text)] == ["effect"]
    # without the dash the modal still scopes over its verb
    assert asserted("You should merge it and it will be pushed.") == []


def test_done_with_a_gerund_stops_an_activity() -> None:
    assert asserted("I'm done guessing at the cause.") == []
    assert asserted("We're finished waiting on the vendor.") == []
    assert asserted("I'm done.") == [("completion", "I'm done")]


def test_a_thing_named_again_keeps_the_place_named_before() -> None:
    text = "I created the three ticket drafts in your Jira board. Each draft has been added."
    assert asserted(text)[-1] == ("effect", "draft has been added")
    text = "I saved the invoice rows in the database. Every row has been updated."
    assert asserted(text)[-1] == ("persistence", "Every row has been updated")
    # a thing not named before, or no place named before: a single edit, no claim
    text = "I opened the ticket in your Jira board. The README has been updated."
    assert all("README" not in span for _, span in asserted(text))
    assert asserted("I wrote the summary. The summary has been updated.") == []
