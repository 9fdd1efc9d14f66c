-- As postgres: create the attacker :role (LOGIN, no privileges yet) and its
-- schema kzatk_<role>, which holds the log and the path wrappers.
CREATE ROLE :"role" LOGIN NOSUPERUSER;
SELECT 'kzatk_' || :'role' AS sch \gset
CREATE SCHEMA :"sch" AUTHORIZATION :"role";
