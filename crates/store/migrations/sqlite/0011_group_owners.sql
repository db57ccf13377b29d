-- Group owners and teams (issue 23, item 4). An owner of a local group may
-- add and remove its members (Identity/AddGroupMembers, Teams/AddTeamMembers)
-- without being a Master Admin. A team (VenafiPS's Teams/*) is a local group
-- with a row in group_teams: its description and products. Owners and the
-- team row go with their group (ON DELETE CASCADE).

CREATE TABLE group_owners (
    group_id TEXT NOT NULL REFERENCES groups(id) ON DELETE CASCADE,
    user_id  TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    PRIMARY KEY (group_id, user_id)
) STRICT;
CREATE INDEX group_owners_user ON group_owners(user_id);

CREATE TABLE group_teams (
    group_id    TEXT PRIMARY KEY REFERENCES groups(id) ON DELETE CASCADE,
    description TEXT NOT NULL,
    products    TEXT NOT NULL                     -- the team's products, joined by newlines (TLS, SSH, Code Signing)
) STRICT;
