#!/usr/bin/env python3
"""Unit tests of replay.py's database-free logic (python3 -m unittest).

The corpus is read from $KZ_CORPUS (default ../shared/corpus); mutated copies
for the structural-check tests are made in a temporary directory and removed.
"""

import json
import os
import re
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import replay  # noqa: E402

CORPUS = os.environ.get('KZ_CORPUS') or os.path.join(replay.ROOT, '..', 'shared', 'corpus')


def have_corpus():
    return os.path.isfile(os.path.join(CORPUS, 'cases', 'manifest.json'))


@unittest.skipUnless(have_corpus(), 'no golden corpus at %s' % CORPUS)
class StructuralCheck(unittest.TestCase):
    """check_corpus finds each kind of defect in a mutated copy."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix='kz-corpus-')
        for d in ('cases', 'fixtures', 'transcripts'):
            shutil.copytree(os.path.join(CORPUS, d), os.path.join(self.tmp, d))
        self.fixture = replay.load_fixture(self.tmp)

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def problems(self):
        return replay.check_corpus(replay.Corpus(self.tmp, 'corpus'), self.fixture)

    def edit(self, rel, fn):
        p = os.path.join(self.tmp, rel)
        with open(p, encoding='utf-8') as f:
            doc = json.load(f)
        fn(doc)
        with open(p, 'w', encoding='utf-8') as f:
            json.dump(doc, f)

    def assertProblem(self, pattern):
        probs = self.problems()
        self.assertTrue(any(re.search(pattern, p) for p in probs),
                        'no problem matching %r in %r' % (pattern, probs))

    def test_clean_corpus_has_no_problem(self):
        self.assertEqual(self.problems(), [])

    def test_case_differs_from_path(self):
        self.edit('transcripts/pull/002-keyset-pagination.json',
                  lambda t: t.__setitem__('case', 'pull/002-other'))
        self.assertProblem(r'pull/002-keyset-pagination: case .* differs')

    def test_title_differs_from_manifest(self):
        self.edit('transcripts/push/001-insert-applied.json',
                  lambda t: t.__setitem__('title', 'changed'))
        self.assertProblem(r'push/001-insert-applied: title differs')

    def test_step_numbering(self):
        def gap(t):
            t['steps'][1]['n'] = 7
        self.edit('transcripts/pull/002-keyset-pagination.json', gap)
        self.assertProblem(r'step at position 2 has n=7')

    def test_unparsable_transcript(self):
        with open(os.path.join(self.tmp, 'transcripts/pull/001-bootstrap-empty.json'), 'w') as f:
            f.write('{"case": ')
        self.assertProblem(r'pull/001-bootstrap-empty: transcript does not parse')

    def test_extra_top_level_key(self):
        self.edit('transcripts/pull/001-bootstrap-empty.json', lambda t: t.__setitem__('extra', 1))
        self.assertProblem(r'top-level keys differ.*extra')

    def test_unlisted_transcript(self):
        shutil.copy(os.path.join(self.tmp, 'transcripts/pull/001-bootstrap-empty.json'),
                    os.path.join(self.tmp, 'transcripts/pull/999-stray.json'))
        self.assertProblem(r'999-stray.json: no manifest entry')

    def test_blocked_entry_with_file(self):
        def unblock(m):
            for e in m['cases']:
                if e.get('blocked_on'):
                    e['file'] = 'transcripts/%s.json' % e['id']
        self.edit('cases/manifest.json', unblock)
        self.assertProblem(r'wakeup/002-wakeup-payload: has blocked_on but a file')

    def test_non_canonical_bytes(self):
        p = os.path.join(self.tmp, 'transcripts/pull/001-bootstrap-empty.json')
        with open(p, encoding='utf-8') as f:
            doc = json.load(f)
        with open(p, 'w', encoding='utf-8') as f:
            json.dump(doc, f, indent=4, sort_keys=True)
            f.write('\n')
        self.assertProblem(r'pull/001-bootstrap-empty: not in canonical form')

    def test_float_number(self):
        def floaty(t):
            t['context']['schema_version'] = 1.5
        self.edit('transcripts/pull/001-bootstrap-empty.json', floaty)
        self.assertProblem(r'number 1.5 at \$.context.schema_version')

    def test_fencing_field_by_directory(self):
        self.edit('transcripts/fencing/002-overlap-redelivery-idempotent.json',
                  lambda t: t.__setitem__('fencing', 'shared'))
        self.assertProblem(r'fencing/002.*fencing .shared., expected .visibility-horizon.')


@unittest.skipUnless(have_corpus(), 'no golden corpus at %s' % CORPUS)
class Generation(unittest.TestCase):
    def transcript(self, cid):
        with open(os.path.join(CORPUS, 'transcripts', cid + '.json'), encoding='utf-8') as f:
            return json.load(f)

    def test_declared_columns_composite_key(self):
        t = self.transcript('push/008-composite-key-writes')
        self.assertEqual(replay.declared_columns(t), ['hall', 'holder', 'owner_id', 'seat'])

    def test_pgtap_plan_counts_every_check(self):
        t = self.transcript('lifecycle/006-continuation-expires-when-its-start-is-reaped')
        sql = replay.gen_pgtap(t['case'], t, {})
        nrpc = sum(1 for s in t['steps'] if s['kind'] == 'rpc')
        nsrv = sum(1 for s in t['steps'] if s['kind'] == 'server')
        self.assertIn('SELECT plan(%d);' % (1 + nsrv + 2 * nrpc), sql)
        self.assertEqual(sql.count('kzc.check('), nrpc)
        self.assertIn('CALL kzc.reap(', sql)

    def test_rpc_call_uses_exactly_the_request_keys(self):
        t = self.transcript('pull/002-keyset-pagination')
        step = next(s for s in t['steps'] if s['kind'] == 'rpc')
        call = replay.rpc_call(step)
        names = re.findall(r'(\w+|"limit") =>', call)
        self.assertEqual(sorted(n.strip('"') for n in names), sorted(step['request']))

    def test_drop_ack_is_called_but_not_compared(self):
        t = self.transcript('push/003-replay-returns-recorded-verdicts')
        sql = replay.gen_pgtap(t['case'], t, {})
        # the drop-ack push and its byte-identical retry; checks: the retry and the pull
        self.assertEqual(sql.count('kizunasync.push('), 2)
        self.assertEqual(sql.count("kzc.check('step"), 2)
        self.assertNotIn("kzc.check('step 3", sql)

    def test_history_precedes_step_one(self):
        t = self.transcript('lifecycle/005-bootstrap-after-reap-pages-to-completion')
        scen = replay.Corpus(CORPUS, 'corpus').scenarios()[t['case']]
        sql = replay.gen_pgtap(t['case'], t, scen)
        self.assertLess(sql.index('CALL kzc.reap(0)'), sql.index('-- step 1'))

    def test_spec_permutation_and_blocks(self):
        t = self.transcript('fencing/003-two-holes-both-delivered')
        scen = replay.Corpus(CORPUS, 'corpus').scenarios()[t['case']]
        spec = replay.gen_spec(t['case'], t, scen)
        self.assertIn('permutation w1_s1 w2_s2 srv_s3 c_s4 w1_commit w2_commit c_s7', spec)
        # a step block ends at its first closing brace: none may occur inside
        for block in re.findall(r'\n\{\n(.*?)\n\}', spec, re.S):
            self.assertNotIn('}', block)
        self.assertIn('CALL kzc.reset(', spec)


class Classification(unittest.TestCase):
    T1, T2 = ': tier 1 (byte)', ': tier 2 (semantic)'

    def test_byte(self):
        r = [('reset', True), ('step 1 pull' + self.T1, True), ('step 1 pull' + self.T2, True)]
        self.assertEqual(replay.classify(r, {}, 3, []), ('PASS-BYTE', ''))

    def test_semantic(self):
        r = [('step 1 pull' + self.T1, False), ('step 1 pull' + self.T2, True)]
        d = {'step 1 pull': {'have': '{"cursor": "2"}', 'want': '{"cursor": "1"}'}}
        out, why = replay.classify(r, d, 2, [])
        self.assertEqual(out, 'PASS-SEMANTIC')
        self.assertIn('$.cursor have 2 want 1', why)

    def test_diverged_names_first_step(self):
        r = [('step 2 pull' + self.T1, False), ('step 2 pull' + self.T2, False),
             ('step 4 push' + self.T1, False), ('step 4 push' + self.T2, False)]
        out, why = replay.classify(r, {'step 2 pull': {'why': 'error: boom'}}, 4, [])
        self.assertEqual((out, why), ('DIVERGED', 'step 2 pull: error: boom'))

    def test_failed_server_step(self):
        r = [('reset', True), ('step 1 server upsert', False), ('step 2 pull' + self.T1, True),
             ('step 2 pull' + self.T2, True)]
        out, _ = replay.classify(r, {}, 4, [])
        self.assertEqual(out, 'DIVERGED')

    def test_missing_checks(self):
        r = [('reset', True)]
        out, why = replay.classify(r, {}, 3, ['psql: ERROR: x'])
        self.assertEqual(out, 'DIVERGED')
        self.assertIn('ran 1 of 3', why)

    def test_first_diff(self):
        self.assertEqual(replay.first_diff({'a': [1, 2]}, {'a': [1, 3]}), ('$.a[1]', 2, 3))
        self.assertEqual(replay.first_diff({'a': 1}, {'a': 1, 'b': 2}), ('$.b', '<missing>', 2))
        self.assertIsNone(replay.first_diff({'a': [True]}, {'a': [True]}))
        self.assertEqual(replay.first_diff([1], [1, 2]), ('$.length', 1, 2))
        self.assertEqual(replay.first_diff({'a': 1}, {'a': True})[0], '$.a')


def run_suite():
    """Run the suite quietly; returns (passed, failed, report text)."""
    import io
    stream = io.StringIO()
    suite = unittest.defaultTestLoader.loadTestsFromModule(sys.modules[__name__])
    res = unittest.TextTestRunner(stream=stream, verbosity=1).run(suite)
    bad = len(res.failures) + len(res.errors)
    return res.testsRun - bad - len(res.skipped), bad, stream.getvalue()


if __name__ == '__main__':
    unittest.main()
