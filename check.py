import re,os,sys
root=sys.argv[1] if len(sys.argv)>1 else '/work/main'
rank={}
order=[['sys','version','ptx_params'],['error'],['activity','leaks'],['table'],['loader'],['device'],['context'],['jit','trace'],['memory','pinned'],['stream','event'],['module'],['launch'],['graph','pool','managed','link','library','tensor_map','launch_config'],['peer','device_pool','topology','nvml','snapshot']]
for i,g in enumerate(order):
    for m in g: rank[m]=i
def mod_of(path):
    rel=os.path.relpath(path,os.path.join(root,'src'))
    top=rel.split('/')[0].replace('.rs','')
    return top
viol=[]
for dp,dn,fn in os.walk(os.path.join(root,'src')):
    for f in fn:
        if not f.endswith('.rs'): continue
        p=os.path.join(dp,f); m=mod_of(p)
        if m in ('lib',): continue
        src=open(p).read()
        # strip comments
        code='\n'.join(l for l in src.split('\n') if not l.strip().startswith('//'))
        alias={'CudaError':'error','LoadError':'error','LoadAttempt':'error','Driver':'loader','DriverOptions':'loader','Device':'device','DriverTable':'table','CurrentContext':'context','Context':'context','PrimaryContext':'context','PrimaryState':'context','DriverVersion':'version','driver':'loader','init':'loader'}
        found=set(re.findall(r'crate::([a-z_]+)',code))|{alias[a] for a in re.findall(r'crate::([A-Z][A-Za-z]+|driver|init)\b',code) if a in alias}
        for t in found:
            if t in rank and m in rank and rank[t]>rank[m]:
                viol.append((m,t,os.path.relpath(p,root)))
            elif t not in rank and t not in ('sys','CudaError','Driver','Device','DriverTable','DriverVersion','CurrentContext','Context','PrimaryContext','PrimaryState','LoadError','LoadAttempt','driver','init'):
                pass
for v in sorted(set(viol)): print(v)
print(len(set(viol)))
