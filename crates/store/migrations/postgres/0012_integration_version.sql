-- An integration's version (issue 23): every change of its row is one
-- conditional UPDATE ... WHERE client_id = ? AND version = ?, which moves it
-- on by one, so two administrators editing one integration at once never
-- lose a change (the loser reads again and applies its change to what the
-- winner wrote).
ALTER TABLE integrations ADD COLUMN version BIGINT NOT NULL DEFAULT 0;
