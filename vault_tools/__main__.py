"""`python -m vault_tools`: the console script's front door (`launch`)."""
from .launch import script

script()
