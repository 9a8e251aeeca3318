"""The kind of a claim from what it is about (docs/claims.md, "The kind rule").

A state word says that something changed; the thing it names says where. Open word
classes from general English and the vocabulary of software work sort the nouns of a
claim's subject and object into four places:

- **remote**: systems and things outside the workspace (hosting services, remotes, pull
  requests, issues, deployments, sites, messages, tickets, bookings, payments, other
  people's documents): an **effect**;
- **local record**: local storage and local git state (commits, branches, the working
  tree, the history, disk, databases): **persistence**;
- **check**: tests, builds, compilers, linters, type checkers, CI, HTTP statuses:
  **verification**;
- anything else (the task and its parts): **completion**.

Some verbs carry their place in themselves ("booked", "refunded", "emailed" are remote;
"committed", "staged" are records; "compiles" is a check).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

Place = Literal["remote", "record", "check"]


def _class(*texts: str) -> frozenset[str]:
    return frozenset(w for text in texts for w in text.split())


# Things outside the workspace: services, remotes, review objects, deployments, messages,
# commerce and travel, other people's documents and accounts.
REMOTE = _class(
    """pr prs pull mr mrs issue issues ticket tickets github gitlab bitbucket vercel
    netlify heroku railway aws s3 gcp azure cloudflare firebase supabase registry
    npm pypi site website websites email emails mail mails mailbox inbox message
    messages reply replies slack discord telegram sms notification notifications
    jira linear trello asana confluence notion calendar meeting meetings invite
    invitation invitations booking bookings reservation reservations waitlist order orders
    payment payments refund refunds flight flights hotel hotels rental fare
    itinerary catalog catalogue subscription subscriptions release releases webhook
    webhooks tweet article articles spreadsheet dropbox sharepoint crm contact
    contacts cron crontab cronjob cronjobs scheduler daemon daemons systemd document
    documents""",
    # someone else's system by its trade: appointments and calendars, accounts kept by a
    # service, commerce and delivery, CRM and messaging services, deployments and the
    # tools that make them, incidents and on-call
    """appointment appointments reminder reminders rsvp account accounts shipping billing
    delivery shipment shipments purchase purchases cart salesforce hubspot zendesk
    intercom freshdesk stripe shopify paypal twilio sendgrid mailchimp gmail outlook
    deployment deployments kubernetes k8s helm terraform pulumi incident incidents
    pagerduty opsgenie statuspage""",
    # what a service keeps for its user (not "address" or "password", which are also a
    # verb and a code word)
    """profile profiles mailing newsletter newsletters draft drafts voicemail""",
)

# Transactions with someone else's system: one "complete" or "done" has happened there
# ("Your order is complete", "Payment complete"), unlike a task that is finished ("I've
# completed ticket 42" is completion).
TRANSACTIONS = _class(
    """order orders booking bookings reservation reservations payment payments purchase
    purchases refund refunds signup enrollment shipment shipments rebooking"""
)

# Systems the work runs on: an act on one is an effect ("The deployment was rolled
# back"), but its working state is the work's own ("Production deployment working").
RUNNING_SYSTEMS = _class("deployment deployments")

# Verbs whose own sense is an act on a remote system.
REMOTE_VERBS = _class(
    """booked rebooked reserved refunded cancelled canceled emailed mailed replied messaged charged
    paid invoiced invited scheduled rescheduled notified published deployed
    redeployed pushed force-pushed posted tweeted uploaded shipped released
    submitted decommissioned provisioned purchased ordered issued forwarded
    transferred"""
)

# Local durable state: version control and storage.
RECORD = _class(
    """sql migration migrations commit commits branch branches git history stash index
    tree disk database db table tables record records file-system filesystem storage
    cache memory memories"""
)

# Acts of version control that only touch local state, whatever they name ("I stashed
# the notification changes").
GIT_VERBS = _class("committed recommitted amended staged stashed unstaged rebased squashed")

RECORD_VERBS = _class(
    """committed recommitted amended staged stashed rebased saved stored persisted written
    wrote recorded logged initialized initialised archived synced"""
)

# Checks: what runs to tell whether the work is right.
CHECK = _class(
    """test tests testing suite suites build builds compile compiles compilation compiler
    lint lints linter linters linting typecheck typechecks type-check tsc mypy
    pyright eslint ruff clippy flake8 pylint pytest jest vitest mocha cargo ci check
    checks e2e smoke http health healthcheck validation verification benchmark
    benchmarks pipeline preflight vet"""
)

CHECK_VERBS = _class(
    """compiles compiled passes passed pass validated verified tested typechecks builds"""
)


# Clients named as the means of an act ("Applied `0003.sql` via psql", "Restarted the
# pods with kubectl"): a database client or migration tool acts on a local record, a
# forge, cloud or cluster CLI on a remote. (Not the engines and libraries, which name
# what the code uses: "Replaced the text file with SQLite".)
MEANS: dict[str, Place] = {
    **dict.fromkeys(
        _class("psql mysql mongosh redis-cli alembic flyway liquibase dbmate sqlcmd"),
        "record",
    ),
    **dict.fromkeys(
        _class("gh glab kubectl helm aws gcloud az vercel netlify heroku flyctl wrangler twine"),
        "remote",
    ),
}


def means_place(words: Sequence[str]) -> Place | None:
    """The place of the client a phrase of means names: "via psql", "using kubectl"."""
    for x, w in enumerate(words):
        if w in ("via", "using", "with", "through"):
            for y in words[x + 1 : x + 4]:
                place = MEANS.get(y)
                if place is not None:
                    return place
    return None


def place_of(words: Sequence[str], owners: bool = True) -> Place | None:
    """The place the nouns of `words` name, the first one to name any deciding: the
    subject's nouns are read before the object's (callers order them so)."""
    prev = ""
    for w in words:
        if w in CHECK or w.endswith("lint"):  # eslint, stylelint, golint, markdownlint…
            return "check"
        if w in REMOTE or (owners and w in _KEPT_FOR_USER and prev in _OWNERS):
            return "remote"
        if w in RECORD:
            return "record"
        prev = w
    return None


# Nouns that are also verbs or code words ("to address", "password hashing"), which name
# what a service keeps for its user only after an owner: "your address", "her password".
_KEPT_FOR_USER = frozenset({"address", "password", "phone", "username"})
_OWNERS = frozenset({"your", "my", "his", "her", "their", "our", "customer's", "user's"})


# Nouns of code: a noun phrase headed by one names part of the program, whatever its
# modifiers name ("the booking logic", "the Stripe webhook handler", "the email template").
CODE_NOUNS = _class(
    """logic code handler handlers function functions module modules component components
    endpoint endpoints class classes method methods helper helpers util utils utility
    route routes controller controllers template templates view views screen screens
    dialog modal button buttons page pages flow flows model models schema schemas
    integration integrations client clients wrapper adapter parser validator service
    services hook hooks script scripts feature features ui api apis sdk form forms
    field fields test tests spec specs fixture fixtures mock mocks docs readme
    calculator calculators chart charts values config configuration runbook runbooks
    manifest manifests middleware library package widget widgets panel layout style
    styles type types interface interfaces variable variables constant constants query
    queries change changes fix fixes edit edits patch patches refactor copy wording text
    texts"""
)


def np_place(phrase: Sequence[str]) -> Place | None:
    """The place a noun phrase names, read from its head noun (its last word): "your
    table reservation" is a reservation (remote), "the booking logic" code (no place; a
    check if its head is one: "the booking tests")."""
    rev = [w for w in reversed(phrase) if w[:1].isalpha() or w.startswith("`")]
    if rev and rev[0] in CODE_NOUNS:
        return "check" if place_of(rev[:1]) == "check" else None
    if rev and rev[0] in _KEPT_FOR_USER and not _OWNERS.isdisjoint(rev):
        return "remote"  # "Your password", "the customer's address"
    return place_of(rev, owners=False)  # (read backwards, an owner would follow its noun)


# Prepositions that open a phrase of place or of what follows an object.
_PHRASE_BREAKS = frozenset({"to", "in", "on", "from", "into", "onto", "at", "for", "of", "with"})


# Times of the calendar: a meeting or a call moved to one is on someone's calendar
# ("The Friday team sync has been moved to 4pm").
_WHEN = _class(
    """monday tuesday wednesday thursday friday saturday sunday tomorrow tonight noon
    am pm a.m. p.m. morning afternoon evening"""
)
_RESCHEDULING = _class("moved shifted rescheduled postponed rebooked pushed")


def calendar_place(verb: str, obj: Sequence[str]) -> Place | None:
    """ "moved to 4pm", "shifted to Thursday morning": a change of time on a calendar."""
    if verb not in _RESCHEDULING:
        return None
    for x, w in enumerate(obj[:-1]):
        if w in ("to", "until") and not _WHEN.isdisjoint(obj[x + 1 : x + 4]):
            return "remote"
    return None


def phrase_place(words: Sequence[str]) -> Place | None:
    """The place an object names: each noun phrase of it (the direct object, then each
    phrase after a preposition) read from its head noun, the first that decides:
    "the checkout flow to handle coupons" is a flow (code), "the draft blog post from
    Notion" names Notion (remote)."""
    chunk: list[str] = []
    prev = ""
    for w in [*words, "to"]:
        after_to, prev = prev == "to", w
        if w in _PHRASE_BREAKS:
            if w == "of" and chunk:
                continue  # "the list of reservations": the phrase runs on
            place = np_place(chunk) if chunk else None
            if place is not None:
                return place
            chunk = []
        elif not (after_to and w in _VERB_HOMOGRAPHS):
            chunk.append(w)  # (not "to account for nested quotes": a verb)
    return None


# Nouns of someone else's system that are also verbs after "to".
_VERB_HOMOGRAPHS = frozenset({"account", "order", "book", "address", "reserve", "post"})


def verb_place(word: str) -> Place | None:
    if word in REMOTE_VERBS:
        return "remote"
    if word in RECORD_VERBS:
        return "record"
    if word in CHECK_VERBS:
        return "check"
    return None


# Verbs of change: what an act does to the thing it names (created, deleted, moved…),
# as against reading or finding it (searched, retrieved, reviewed).
CHANGE_VERBS = _class(
    """created deleted removed moved updated added closed reopened opened cancelled
    canceled renamed merged restored amended modified changed edited replaced
    assigned labelled labeled approved upgraded downgraded rebooked booked refunded
    initialized initialised configured enabled disabled reset applied migrated
    synced backed published posted archived unarchived transferred submitted filed
    attached uploaded imported exported rolled reverted tagged released deployed
    provisioned registered subscribed unsubscribed scheduled rescheduled sent
    replied forwarded revised pruned purged erased wiped processed""",
    # the acts of operations, support and commerce on the things they keep
    """reactivated deactivated suspended resumed paused acknowledged escalated
    restarted rebooted scaled rotated revoked granted renewed extended rerouted
    reassigned redirected dismissed muted unmuted shared unshared""",
    # the acts of a mailbox and a calendar
    """declined accepted marked flagged unflagged starred unstarred snoozed pinned
    unpinned unsubscribed rsvped commented delivered""",
)

# Outcomes that are not a result reached ("I am completely blocked").
NEGATIVE_OUTCOMES = _class(
    """blocked failed rejected denied stuck prevented interrupted aborted skipped deferred
    postponed disabled unresolved unchanged untouched required needed requested
    expected supposed"""
)

# Other parties: a claim with one of these as its subject reports someone else's work.
OTHER_PARTIES = _class(
    """user users reviewer reviewers maintainer maintainers he she someone somebody
    customer customers author owner human colleague teammate teammates operator boss
    manager team"""
)

# Verbs of speech: what another party says is reported, not asserted.
SPEECH_VERBS = _class(
    """says said claims claimed mentions mentioned states stated told tells writes wrote
    replied replies asks asked reports reported announces announced thinks thought
    believes believed expects expected"""
)

# Evidence verbs that report another party's words when their subject is a message
# ("The agent's last message indicates that it is done").
HEARSAY_VERBS = _class("indicates indicated suggests suggested implies implied")

MESSAGES = _class("message messages comment comments reply replies response responses note")
