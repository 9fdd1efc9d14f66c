-- kizunasync 0.1.0 -> 0.2.0 upgrade.  Every change made to sql/src/ for
-- 0.2.0 has its counterpart here; test/t/upgrade.sh checks that an upgraded
-- database has exactly the objects of a fresh 0.2.0 install.
\echo Use "ALTER EXTENSION kizunasync UPDATE TO '0.2.0'" to load this file. \quit
