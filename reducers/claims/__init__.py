"""The claim reader (SPEC section 6): a narrative's prose against the account.

Its own room inside the core: the Markdown parser (markdown-it) is imported here and
nowhere else in `reducers/`. `checker` reads a text and judges it against one account
revision; `verdicts` settles the judgements into ClaimVerdict records; the other modules
are the grammar the reader is built from (docs/claims.md).
"""
