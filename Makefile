# kizunasync -- PGXS build
EXTENSION   = kizunasync
MODULE_big  = kizunasync
OBJS        = $(patsubst %.c,%.o,$(sort $(wildcard src/*.c)))

# The current version's install script is assembled from ordered parts
# under sql/src/; the upgrade script from the previous release is assembled
# from sql/upgrade/PREV--NEW.pre.sql, the routine parts of sql/src/ (all but
# the tables and the triggers, which only a fresh install creates),
# sql/upgrade/PREV--NEW.post.sql and the grants.  Released scripts
# (sql/kizunasync--X.Y.Z.sql, sql/kizunasync--A--B.sql) are frozen as shipped
# and committed (see decisions/0080-releases.md).
KZ_TOP      := $(dir $(abspath $(lastword $(MAKEFILE_LIST))))
KZ_VERSION  := $(shell sed -n "s/^default_version = '\(.*\)'/\1/p" $(KZ_TOP)kizunasync.control)
ifeq ($(KZ_VERSION),)
$(error kizunasync.control has no default_version: cannot name the install script)
endif
KZ_PARTS    = $(sort $(wildcard sql/src/*.sql))
KZ_INSTALL_ONLY = sql/src/00_schema.sql sql/src/90_triggers.sql
KZ_GRANTS   = sql/src/99_grants.sql
KZ_ROUTINES = $(filter-out $(KZ_INSTALL_ONLY) $(KZ_GRANTS),$(KZ_PARTS))
KZ_UPGRADE  = $(patsubst sql/upgrade/%.pre.sql,sql/kizunasync--%.sql,$(wildcard sql/upgrade/*--$(KZ_VERSION).pre.sql))
DATA_built  = sql/kizunasync--$(KZ_VERSION).sql $(KZ_UPGRADE)
DATA        = $(filter-out $(DATA_built),$(wildcard sql/kizunasync--*.sql))

PG_CPPFLAGS = -I$(srcdir)/src $(shell pkg-config --cflags jansson 2>/dev/null)
PG_CFLAGS   = -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers
SHLIB_LINK += -ljansson

# pg_regress: test/sql/*.sql against expected/*.out (top level; PostgreSQL 15's
# pg_regress has no --expecteddir, so test/expected is a link to it, made here)
REGRESS      = $(sort $(patsubst test/sql/%.sql,%,$(wildcard test/sql/*.sql)))
REGRESS_OPTS = --inputdir=test --outputdir=$(KZ_OUTDIR)/regress
# isolation: test/specs/*.spec against expected/*.out
ISOLATION      = $(sort $(patsubst test/specs/%.spec,%,$(wildcard test/specs/*.spec)))
ISOLATION_OPTS = --inputdir=test --outputdir=$(KZ_OUTDIR)/isolation

KZ_OUTDIR ?= $(CURDIR)/test/out

EXTRA_CLEAN = $(DATA_built) test/out

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

sql/kizunasync--$(KZ_VERSION).sql: $(KZ_PARTS)
	cat $^ > $@

$(KZ_UPGRADE): sql/kizunasync--%.sql: sql/upgrade/%.pre.sql $(KZ_ROUTINES) sql/upgrade/%.post.sql $(KZ_GRANTS)
	cat $^ > $@

# pg_regress refuses to create its output directories as root-owned when the
# server runs as postgres; make sure they exist and are writable.
installcheck: kz-outdirs
.PHONY: kz-outdirs
kz-outdirs:
	mkdir -p $(KZ_OUTDIR)/regress $(KZ_OUTDIR)/isolation
	chmod 777 $(KZ_OUTDIR) $(KZ_OUTDIR)/regress $(KZ_OUTDIR)/isolation
	test -L test/expected || ln -s ../expected test/expected

# The test-only extension and its library (test/ext): installed by the test
# harness only.
.PHONY: install-test clean-test
install-test:
	$(MAKE) -C test/ext PG_CONFIG='$(PG_CONFIG)' install
clean-test:
	$(MAKE) -C test/ext PG_CONFIG='$(PG_CONFIG)' clean
clean: clean-test
