"""The services every operation goes through: a vault opened for one command (`workspace`), a state kept current
while one process writes note after note (`live`) with a forked child fetching what its seals need ahead
(`prefetch`), the checks of typed values (`checks`) and the rulings whose note is gone (`missing`)."""
