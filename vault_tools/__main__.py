from .launch import script

script()
