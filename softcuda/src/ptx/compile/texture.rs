//! Lowering of the texture and surface instructions (unified mode: the handle is a
//! `.u64`/`.b64` register or a kernel parameter): `tex` (and `tex.level`),
//! `txq`, `suld.b`, `sust.b` and `suq`, each to one `Op::Tex` whose operands are
//! kept in `Program::tex`. What is refused, by name: the cube and multisample
//! geometries, `tex.grad`, depth compare, offsets and residency predicates,
//! `tld4`, `sust.p`, `sured`, `txq.level.*` and the sampler queries.

use super::*;
use crate::ptx::ir::{SurfClamp, TexOp, TexQuery, TexSite};

/// The geometry modifiers: (name, dimensions, layered, coordinates in the vector).
const GEOMS: [(&str, u8, bool, usize); 5] = [
    ("1d", 1, false, 1),
    ("2d", 2, false, 2),
    ("3d", 3, false, 4),
    ("a1d", 1, true, 2),
    ("a2d", 2, true, 4),
];

fn query(name: &str) -> Option<TexQuery> {
    Some(match name {
        "width" => TexQuery::Width,
        "height" => TexQuery::Height,
        "depth" => TexQuery::Depth,
        "channel_data_type" => TexQuery::ChannelDataType,
        "channel_order" => TexQuery::ChannelOrder,
        "normalized_coords" => TexQuery::NormalizedCoords,
        "filter_mode" => TexQuery::FilterMode,
        "addr_mode_0" => TexQuery::AddrMode(0),
        "addr_mode_1" => TexQuery::AddrMode(1),
        "addr_mode_2" => TexQuery::AddrMode(2),
        "array_size" => TexQuery::ArraySize,
        "num_mipmap_levels" => TexQuery::NumMipmapLevels,
        "num_samples" => TexQuery::NumSamples,
        _ => return None,
    })
}

impl Fcx<'_> {
    /// The handle operand: a register, or a kernel parameter (loaded into a
    /// temporary).
    fn tex_handle(&mut self, name: &str) -> Result<Reg, String> {
        match self.lookup(name) {
            Some(Sym::Reg(_)) => self.reg(name),
            Some(Sym::KParam { off }) => {
                let d = self.new_reg(64, false);
                self.emit(
                    Op::Ld {
                        space: MemSpace::KParam,
                        ty: Ty::U64,
                        n: 1,
                        dbits: 64,
                        d: [d, NO_REG, NO_REG, NO_REG],
                        a: Addr::Abs(off),
                    },
                    NO_REG,
                    false,
                );
                Ok(d)
            }
            Some(Sym::Global(_)) => Err(format!(
                "Texture and surface references ('{name}') are not supported; use texture objects"
            )),
            Some(_) => Err(format!("'{name}' is not a texture or surface handle")),
            None => Err(format!("Unknown symbol '{name}'")),
        }
    }

    /// `[a, c]`: the handle and the coordinate operands.
    fn tex_operand<'o>(&mut self, o: &'o Operand) -> Result<(Reg, Vec<&'o Operand>), String> {
        match o {
            Operand::Addr(Some(name), 0) => Ok((self.tex_handle(name)?, Vec::new())),
            Operand::List(l) => {
                let Some(Operand::Addr(Some(name), 0)) = l.first() else {
                    return Err("Bad texture or surface operand".into());
                };
                let h = self.tex_handle(name)?;
                let coords = match &l[1..] {
                    [Operand::Vec(v)] => v.iter().collect(),
                    [c @ Operand::Name(_)] | [c @ Operand::Imm(_)] => vec![c],
                    [] => Vec::new(),
                    _ => {
                        return Err(
                            "Texture samplers and extra operands are not supported (unified mode only)"
                                .into(),
                        );
                    }
                };
                Ok((h, coords))
            }
            _ => Err("Expected a texture or surface operand [handle, ...]".into()),
        }
    }

    /// The register list of a vector operand of `n` elements (a scalar for 1).
    fn tex_vals(&mut self, o: &Operand, n: usize, ty: Ty, dst: bool) -> Result<[Reg; 4], String> {
        let elems: Vec<&Operand> = match o {
            Operand::Vec(v) if v.len() == n => v.iter().collect(),
            x if n == 1 && !matches!(x, Operand::Vec(_)) => vec![x],
            Operand::Vec(v) if n == 1 && v.len() == 1 => v.iter().collect(),
            _ => return Err("Vector operand does not match the instruction".into()),
        };
        let mut regs = [NO_REG; 4];
        for (k, e) in elems.iter().enumerate() {
            regs[k] = if dst { self.dst(e)? } else { self.src(e, ty)? };
        }
        Ok(regs)
    }

    /// Lowers `tex`, `txq`, `suld`, `sust` or `suq`.
    pub(super) fn texture(
        &mut self,
        mn: &str,
        m: &mut Mods,
        i: &parse::Inst,
    ) -> Result<Op, String> {
        let opc = i.opcode.as_str();
        let refuse = |what: &str| Err(format!("Unsupported {what} in instruction '{opc}'"));
        let site = match mn {
            "txq" | "suq" => {
                if m.has("level") {
                    return refuse("'.level' query");
                }
                let names: Vec<&str> = m.items.iter().filter(|x| !x.1).map(|x| x.0).collect();
                let q = names.iter().find_map(|n| query(n).map(|q| (*n, q)));
                let Some((qname, q)) = q else {
                    return Err(format!("Unsupported query in instruction '{opc}'"));
                };
                m.has(qname);
                if m.ty()? != Ty::B32 {
                    return Err(format!("Illegal type in '{opc}'"));
                }
                let surface = mn == "suq";
                if surface
                    && !matches!(
                        q,
                        TexQuery::Width
                            | TexQuery::Height
                            | TexQuery::Depth
                            | TexQuery::ChannelDataType
                            | TexQuery::ChannelOrder
                            | TexQuery::ArraySize
                    )
                {
                    return Err(format!("Illegal query in '{opc}'"));
                }
                let o = self.operands(i, 2)?;
                let d = self.dst(&o[0])?;
                let (handle, coords) = self.tex_operand(&o[1])?;
                if !coords.is_empty() {
                    return Err(format!("Bad operand in '{opc}'"));
                }
                TexSite {
                    op: if surface {
                        TexOp::Suq(q)
                    } else {
                        TexOp::Txq(q)
                    },
                    dims: 0,
                    layered: false,
                    handle,
                    coords: [NO_REG; 4],
                    fcoords: false,
                    vals: [d, NO_REG, NO_REG, NO_REG],
                    ty: Ty::B32,
                    lod: NO_REG,
                    clamp: SurfClamp::Trap,
                }
            }
            "tex" => {
                if m.has("grad") {
                    return refuse("'.grad' (explicit gradients)");
                }
                let level = m.has("level");
                m.ignore(&["base"]);
                let geom = self.geom(m, opc)?;
                let n = match m.one_of(&["v4", "v2"]) {
                    Some("v2") => 2,
                    Some(_) => 4,
                    None => return Err(format!("Missing vector size in '{opc}'")),
                };
                let t = m.types()?;
                let (ty, cty) = match t.as_slice() {
                    [d, c] => (*d, *c),
                    _ => return Err(format!("Expected two types in '{opc}'")),
                };
                if !matches!(ty, Ty::F32 | Ty::S32 | Ty::U32) {
                    return Err(format!("Unsupported result type in '{opc}'"));
                }
                if !matches!(cty, Ty::F32 | Ty::S32) {
                    return Err(format!("Illegal coordinate type in '{opc}'"));
                }
                if level && cty != Ty::F32 {
                    return Err(format!("'.level' needs .f32 coordinates in '{opc}'"));
                }
                let want = if level { 3 } else { 2 };
                if i.ops.len() != want {
                    return refuse("operand (offsets, depth compare or a residency predicate)");
                }
                if matches!(i.ops[0], Operand::Pair(..)) {
                    return refuse("residency predicate");
                }
                let vals = self.tex_vals(&i.ops[0], n, ty, true)?;
                let (handle, c) = self.tex_operand(&i.ops[1])?;
                let coords = self.tex_coords(&c, geom, cty, opc)?;
                let lod = if level {
                    self.src(&i.ops[2], Ty::F32)?
                } else {
                    NO_REG
                };
                TexSite {
                    op: TexOp::Fetch,
                    dims: geom.1,
                    layered: geom.2,
                    handle,
                    coords,
                    fcoords: cty == Ty::F32,
                    vals,
                    ty,
                    lod,
                    clamp: SurfClamp::Trap,
                }
            }
            _ => {
                // suld / sust
                if m.has("p") {
                    return refuse("'.p' (formatted) surface access");
                }
                if !m.has("b") {
                    return Err(format!("Missing '.b' in '{opc}'"));
                }
                let geom = self.geom(m, opc)?;
                m.ignore(&["ca", "cg", "cs", "cv", "lu", "wb", "wt"]);
                let clamp = match m.one_of(&["trap", "clamp", "zero"]) {
                    Some("clamp") => SurfClamp::Clamp,
                    Some("zero") => SurfClamp::Zero,
                    _ => SurfClamp::Trap,
                };
                let n = match m.one_of(&["v2", "v4"]) {
                    Some("v2") => 2,
                    Some("v4") => 4,
                    _ => 1,
                };
                let ty = m.ty()?;
                if !matches!(ty, Ty::B8 | Ty::B16 | Ty::B32 | Ty::B64) {
                    return Err(format!("Illegal type in '{opc}'"));
                }
                let o = self.operands(i, 2)?;
                let store = mn == "sust";
                let (mo, vo) = if store {
                    (&o[0], &o[1])
                } else {
                    (&o[1], &o[0])
                };
                let vals = self.tex_vals(vo, n, ty, !store)?;
                let (handle, c) = self.tex_operand(mo)?;
                let coords = self.tex_coords(&c, geom, Ty::S32, opc)?;
                TexSite {
                    op: if store { TexOp::Sust } else { TexOp::Suld },
                    dims: geom.1,
                    layered: geom.2,
                    handle,
                    coords,
                    fcoords: false,
                    vals,
                    ty,
                    lod: NO_REG,
                    clamp,
                }
            }
        };
        self.prog.tex.push(site);
        Ok(Op::Tex {
            site: self.prog.tex.len() as u32 - 1,
        })
    }

    /// The geometry modifier.
    fn geom(&mut self, m: &mut Mods, opc: &str) -> Result<(&'static str, u8, bool, usize), String> {
        if let Some(g) = m.one_of(&["cube", "acube", "2dms", "a2dms"]) {
            return Err(format!(
                "Unsupported geometry '.{g}' in instruction '{opc}'"
            ));
        }
        let g = m
            .one_of(&["1d", "2d", "3d", "a1d", "a2d"])
            .ok_or_else(|| format!("Missing geometry in '{opc}'"))?;
        GEOMS
            .iter()
            .find(|x| x.0 == g)
            .copied()
            .ok_or_else(|| format!("Missing geometry in '{opc}'"))
    }

    /// The coordinate registers of geometry `geom` (the layer of `a1d`/`a2d` first,
    /// an `.s32`; the fourth of `3d`/`a2d` ignored).
    fn tex_coords(
        &mut self,
        c: &[&Operand],
        geom: (&str, u8, bool, usize),
        cty: Ty,
        opc: &str,
    ) -> Result<[Reg; 4], String> {
        if c.len() != geom.3 {
            return Err(format!(
                "Coordinate vector of {} elements does not match '{opc}'",
                c.len()
            ));
        }
        let mut regs = [NO_REG; 4];
        let used = usize::from(geom.1) + usize::from(geom.2);
        for (k, o) in c.iter().take(used).enumerate() {
            let ty = if geom.2 && k == 0 { Ty::S32 } else { cty };
            regs[k] = self.src(o, ty)?;
        }
        Ok(regs)
    }
}
