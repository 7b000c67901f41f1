"""Re-measure backward_peak_bytes of crates/llmsize-cli/tests/fixtures/train/truth/holdout.json's runs without checkpointing
(train_oracle.py, same settings; a run is kept only where its retained and forward-peak bytes equal the recorded ones).

    python3 tools/train-truth/holdout-backward.py [MODEL_ID...] > out.jsonl
"""
import json, subprocess, sys, os
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..')
H = os.path.join(ROOT, 'crates/llmsize-cli/tests/fixtures/train/truth')
ORACLE = os.environ.get('ORACLE_DIR', os.path.join(ROOT, '..', 'shared', 'oracle', 'train'))
PYTHON = os.environ.get('ORACLE_PYTHON', 'python3')
d = json.load(open(f'{H}/holdout.json'))
order = sys.argv[1:] or [e['id'] for e in d]
for e in sorted(d, key=lambda e: order.index(e['id']) if e['id'] in order else 99):
    if e['id'] not in order: continue
    for r in e['runs']:
        if r['ckpt']: continue
        cmd = [PYTHON, 'train_oracle.py', os.path.join(H, e['config']), '--seq', str(r['seq']), '--batch', str(r['batch']),
               '--dtype', r['dtype'], '--attn', r['attn'], '--ckpt', '0', '--no-optim', '--no-params']
        p = subprocess.run(cmd, capture_output=True, text=True, cwd=ORACLE)
        try:
            run = json.loads(p.stdout.strip().splitlines()[-1])['runs'][0]
        except Exception as ex:
            print(json.dumps({'id': e['id'], 'error': p.stderr[-300:]}), flush=True); continue
        print(json.dumps({'id': e['id'], 'dtype': r['dtype'], 'attn': r['attn'], 'batch': r['batch'], 'seq': r['seq'],
                          'retained_bytes': run['retained_bytes'], 'forward_peak_bytes': run['forward_peak_bytes'],
                          'backward_peak_bytes': run['backward_peak_bytes'],
                          'matches': run['retained_bytes'] == r['retained_bytes'] and run['forward_peak_bytes'] == r['forward_peak_bytes']}), flush=True)
