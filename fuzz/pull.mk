# Fuzz target for the pull request parser (not part of the PGXS build).
#   make -C fuzz -f pull.mk                  # libFuzzer + ASan + UBSan (clang)
#   make -C fuzz -f pull.mk seeds-pull       # seed corpus from the golden transcripts
#   ./fuzz/fuzz_pull_request -max_total_time=60 fuzz/seeds/pull
KZ_CORPUS ?= ../../shared/corpus
CC       = clang
CFLAGS   = -g -O1 -I../src $(shell pkg-config --cflags jansson) -Wall -Wextra
SAN      = -fsanitize=fuzzer,address,undefined
LIBS     = $(shell pkg-config --libs jansson)

all: fuzz_pull_request

fuzz_pull_request: fuzz_pull_request.c ../src/request_pull.c ../src/request_pull.h
	$(CC) $(CFLAGS) $(SAN) -o $@ fuzz_pull_request.c ../src/request_pull.c $(LIBS)

# Replay driver without libFuzzer (ASan + UBSan only).
replay_pull_request: fuzz_pull_request.c ../src/request_pull.c ../src/request_pull.h
	$(CC) $(CFLAGS) -DKZ_FUZZ_MAIN -fsanitize=address,undefined -o $@ fuzz_pull_request.c ../src/request_pull.c $(LIBS)

seeds-pull:
	mkdir -p seeds/pull
	python3 seeds_pull.py $(KZ_CORPUS) seeds/pull

clean-pull:
	rm -rf fuzz_pull_request replay_pull_request seeds/pull

.PHONY: all seeds-pull clean-pull
