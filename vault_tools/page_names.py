"""The names of the generated pages, apart from the code that makes them: the agent hooks check a path
against them without importing it."""

OPEN_QUESTIONS = "Open questions"
DECISIONS_LOG = "Decisions log"
ARCHIVE = "Decisions archive"
PAGE_NAMES = (OPEN_QUESTIONS, DECISIONS_LOG, ARCHIVE)

# The Obsidian base `init` writes beside the pages (the owner's once written), and the views the pages embed
BASE_FILE = "Decisions.base"
OPEN_QUESTIONS_VIEW = "Open questions"
CURRENT_RULINGS_VIEW = "Current rulings"
RECENT_VIEW = "Recently changed"
HISTORY_VIEW = "History by status"
