"""The names of the generated pages, apart from the code that makes them: the agent hooks check a path
against them without importing it."""

OPEN_QUESTIONS = "Open questions"
DECISIONS_LOG = "Decisions log"
ARCHIVE = "Decisions archive"
PAGE_NAMES = (OPEN_QUESTIONS, DECISIONS_LOG, ARCHIVE)
