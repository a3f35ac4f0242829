import csv, sys
best = {}
for r in csv.DictReader(open(sys.argv[1])):
    key = (r['shape'], int(r['M']))
    k = r['kernel']
    if k == 'cublas_f16': best.setdefault(key, {})['cublas'] = (float(r['us']), '')
    elif k == 'cuda_prefill': best.setdefault(key, {})['default'] = (float(r['us']), r['plan'])
    else:
        tile = k.split(':')[1]; sp = k.split(':')[2]
        d = best.setdefault(key, {})
        if tile not in d or float(r['us']) < d[tile][0]: d[tile] = (float(r['us']), sp)
for key in sorted(best):
    d = best[key]
    print(key[0], key[1], ' '.join('%s=%.1f%s' % (t.replace('wgmma_', '').replace('_tma_ei', '').replace('_tma', ''), v[0], (':' + v[1]) if t not in ('default',) else '') for t, v in d.items() if t != 'default'), '| default %.1f %s' % d['default'] if 'default' in d else '')
