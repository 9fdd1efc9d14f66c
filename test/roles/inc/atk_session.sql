-- Open the attacker's own session (\connect as :role), plant every shadow
-- (gen_names.py's script), then the control probe: an unqualified type and
-- an unqualified function in the attacker's own statement must reach evil()
-- as the attacker (proves the shadows are live).  Sets kzt.action = :tag
-- for the actions that follow.  ON_ERROR_STOP is off from here on.
\connect - :role
\i :gen
SET kzt.action = 'control';
SELECT '{}'::jsonb IS NOT NULL AS probe1, now() IS NOT NULL AS probe2 \gset kz_
SET kzt.action = :'tag';
