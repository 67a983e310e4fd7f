//! Module image formats: PTX text, cubins (ELF) and fatbins told apart by their first
//! bytes, and a binary image's headers, contents and internal indices checked against
//! its length before the driver — which takes a bare pointer — reads it.
//!
//! A cubin must be a 64-bit little-endian ELF file whose program headers, section
//! headers, segments and sections (other than `NOBITS` ones, and CUDA's own types
//! for `.nv.global` and `.nv.shared`, which have no file contents) lie within the image;
//! whose section-name table is a NUL-terminated string table with contents in the
//! image, holding every section's name; whose `sh_link`s are section indices; whose
//! symbol tables have 24-byte entries, a NUL-terminated string table in the image
//! holding every symbol's name, and in-range section indices; and whose relocation
//! sections have 16- (`REL`) or 24-byte (`RELA`) entries, a symbol table as `sh_link`,
//! a section index as `sh_info` and in-range symbol indices. A fatbin's entries must
//! lie within it, and its uncompressed ELF entries are checked as cubins.

use crate::error::CudaError;

/// The formats a module image can have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Image {
    Ptx,
    Cubin,
    Fatbin,
}

pub(crate) fn invalid(reason: &'static str) -> CudaError {
    CudaError::InvalidImage(reason)
}

/// Little-endian reads of a byte image; `None` past its end.
struct Bytes<'i>(&'i [u8]);

impl Bytes<'_> {
    fn get<const N: usize>(&self, at: u64) -> Option<[u8; N]> {
        let at = usize::try_from(at).ok()?;
        self.0.get(at..at.checked_add(N)?)?.try_into().ok()
    }
    fn u8(&self, at: u64) -> Option<u64> {
        self.get::<1>(at).map(|[b]| b as u64)
    }
    fn u16(&self, at: u64) -> Option<u64> {
        self.get(at).map(|b| u16::from_le_bytes(b) as u64)
    }
    fn u32(&self, at: u64) -> Option<u64> {
        self.get(at).map(|b| u32::from_le_bytes(b) as u64)
    }
    fn u64(&self, at: u64) -> Option<u64> {
        self.get(at).map(u64::from_le_bytes)
    }
    /// `count` records of `size` bytes at `offset` lie within the image.
    fn holds(&self, offset: Option<u64>, count: u64, size: Option<u64>) -> bool {
        offset
            .zip(size)
            .and_then(|(o, s)| o.checked_add(count.checked_mul(s)?))
            .is_some_and(|end| end <= self.0.len() as u64)
    }
}

/// The image's format, its binary headers checked against its length.
pub(crate) fn image_kind(image: &[u8]) -> Result<Image, CudaError> {
    if image.starts_with(b"\x7fELF") {
        check_elf(image)?;
        return Ok(Image::Cubin);
    }
    let b = Bytes(image);
    if b.u32(0) == Some(0xBA55_ED50) {
        check_fatbin(&b)?;
        return Ok(Image::Fatbin);
    }
    Ok(Image::Ptx)
}

// Section types.
const SYMTAB: u64 = 2;
const RELA: u64 = 4;
const NOBITS: u64 = 8;
const REL: u64 = 9;
const DYNSYM: u64 = 11;
/// CUDA's own section types without contents in the file, which relocatable
/// (`-rdc`) cubins use where executable ones have `NOBITS`: `.nv.global`
/// (`SHT_CUDA_GLOBAL`) and `.nv.shared.*` (`SHT_CUDA_SHARED`).
const CUDA_GLOBAL: u64 = 0x7000_0007;
const CUDA_SHARED: u64 = 0x7000_000A;
/// Section indices from here up (`SHN_LORESERVE`) are special (`SHN_ABS`, ...).
const SPECIAL_INDEX: u64 = 0xFF00;
/// `sizeof(Elf64_Sym)`.
const SYM_SIZE: u64 = 24;

/// The fields of an `Elf64_Shdr` that the checks use.
#[derive(Debug, Clone, Copy)]
struct Section {
    name: u64,
    ty: u64,
    offset: u64,
    size: u64,
    link: u64,
    info: u64,
    entsize: u64,
}

impl Section {
    /// Whether the section's bytes are in the file (not `NOBITS` or CUDA's like).
    fn has_contents(&self) -> bool {
        !matches!(self.ty, NOBITS | CUDA_GLOBAL | CUDA_SHARED)
    }

    fn read(b: &Bytes<'_>, at: u64) -> Option<Section> {
        Some(Section {
            name: b.u32(at)?,
            ty: b.u32(at.checked_add(0x04)?)?,
            offset: b.u64(at.checked_add(0x18)?)?,
            size: b.u64(at.checked_add(0x20)?)?,
            link: b.u32(at.checked_add(0x28)?)?,
            info: b.u32(at.checked_add(0x2C)?)?,
            entsize: b.u64(at.checked_add(0x38)?)?,
        })
    }

    /// A string table the driver can read C strings from: contents in the image
    /// (not `NOBITS`), not empty, its last byte NUL.
    fn is_string_table(&self, b: &Bytes<'_>) -> bool {
        self.has_contents()
            && self.size > 0
            && b.holds(Some(self.offset), 1, Some(self.size))
            && self
                .offset
                .checked_add(self.size - 1)
                .and_then(|last| b.u8(last))
                == Some(0)
    }

    /// The `i`-th record of `size` bytes, if it lies within the section.
    fn record(&self, i: u64, size: u64) -> Option<u64> {
        let start = i.checked_mul(size)?;
        (start.checked_add(size)? <= self.size).then_some(self.offset.checked_add(start)?)
    }
}

/// A 64-bit little-endian ELF file whose headers, contents and internal indices are
/// consistent with `image` (see the module's documentation for the rules).
fn check_elf(image: &[u8]) -> Result<(), CudaError> {
    let b = Bytes(image);
    if image.len() < 64 || image.get(4) != Some(&2) || image.get(5) != Some(&1) {
        return Err(invalid("a cubin must be a 64-bit little-endian ELF file"));
    }
    let (phoff, phnum) = (b.u64(0x20), b.u16(0x38).unwrap_or(0));
    let (shoff, shnum) = (b.u64(0x28), b.u16(0x3C).unwrap_or(0));
    if phnum == 0xFFFF || (shnum == 0 && shoff != Some(0)) || b.u16(0x3E) == Some(0xFFFF) {
        return Err(invalid("extended ELF header numbering is not supported"));
    }
    if phnum > 0 {
        if b.u16(0x36) != Some(56) || !b.holds(phoff, phnum, Some(56)) {
            return Err(invalid(
                "the ELF program headers lie past the end of the image",
            ));
        }
        for i in 0..phnum {
            // In range: `holds` checked `phoff + phnum * 56` against the length.
            let at = phoff.unwrap_or(0) + i * 56;
            if !b.holds(b.u64(at + 0x08), 1, b.u64(at + 0x20)) {
                return Err(invalid("an ELF segment lies past the end of the image"));
            }
        }
    }
    if shnum > 0 {
        check_sections(&b, shoff.unwrap_or(0), shnum)?;
    }
    Ok(())
}

/// The section headers (`shnum > 0` of them at `shoff`) and what they index.
fn check_sections(b: &Bytes<'_>, shoff: u64, shnum: u64) -> Result<(), CudaError> {
    if b.u16(0x3A) != Some(64) || !b.holds(Some(shoff), shnum, Some(64)) {
        return Err(invalid(
            "the ELF section headers lie past the end of the image",
        ));
    }
    let strndx = b
        .u16(0x3E)
        .filter(|&i| i < shnum)
        .ok_or(invalid("the ELF section-name table index is out of range"))?;
    let mut sections = Vec::new();
    for i in 0..shnum {
        let s = shoff
            .checked_add(i * 64)
            .and_then(|at| Section::read(b, at))
            .ok_or(invalid(
                "the ELF section headers lie past the end of the image",
            ))?;
        if s.has_contents() && !b.holds(Some(s.offset), 1, Some(s.size)) {
            return Err(invalid("an ELF section lies past the end of the image"));
        }
        sections.push(s);
    }
    let names = usize::try_from(strndx)
        .ok()
        .and_then(|i| sections.get(i))
        .filter(|s| s.is_string_table(b))
        .ok_or(invalid(
            "the ELF section-name table must be a NUL-terminated string table with \
             contents in the image (not NOBITS)",
        ))?;
    // Symbol and relocation tables are walked entry by entry; in a well-formed file
    // they do not overlap, so together they are no longer than the image. Holding
    // them to that keeps the walk linear in the image's length.
    let mut walk_budget = b.0.len() as u64;
    for s in &sections {
        if s.name >= names.size {
            return Err(invalid(
                "an ELF section's name (sh_name) lies outside the section-name table",
            ));
        }
        if s.link >= shnum {
            return Err(invalid("an ELF section's sh_link is not a section index"));
        }
        if matches!(s.ty, SYMTAB | DYNSYM | REL | RELA) {
            walk_budget = walk_budget.checked_sub(s.size).ok_or(invalid(
                "the ELF symbol and relocation tables together are longer than the image",
            ))?;
        }
        match s.ty {
            SYMTAB | DYNSYM => check_symbols(b, &sections, s, shnum)?,
            REL | RELA => check_relocations(b, &sections, s, shnum)?,
            _ => {}
        }
    }
    Ok(())
}

/// The section `sections[index]`, for an index already checked to be `< shnum`.
fn section(sections: &[Section], index: u64) -> Option<&Section> {
    sections.get(usize::try_from(index).ok()?)
}

/// A symbol table: 24-byte entries, a string table holding every name, and section
/// indices in range (or special).
fn check_symbols(
    b: &Bytes<'_>,
    sections: &[Section],
    symtab: &Section,
    shnum: u64,
) -> Result<(), CudaError> {
    if symtab.entsize != SYM_SIZE || !symtab.size.is_multiple_of(SYM_SIZE) {
        return Err(invalid(
            "an ELF symbol table's entries must be 24 bytes (Elf64_Sym) and its size a \
             multiple of that",
        ));
    }
    let strings = section(sections, symtab.link)
        .filter(|s| s.is_string_table(b))
        .ok_or(invalid(
            "an ELF symbol table's string table (sh_link) must be a NUL-terminated string \
             table with contents in the image (not NOBITS)",
        ))?;
    for i in 0..symtab.size / SYM_SIZE {
        let at = symtab.record(i, SYM_SIZE);
        let name = at.and_then(|at| b.u32(at));
        let shndx = at.and_then(|at| b.u16(at.checked_add(6)?));
        let (Some(name), Some(shndx)) = (name, shndx) else {
            return Err(invalid("an ELF section lies past the end of the image"));
        };
        if name >= strings.size {
            return Err(invalid(
                "an ELF symbol's name (st_name) lies outside its string table",
            ));
        }
        if shndx < SPECIAL_INDEX && shndx >= shnum {
            return Err(invalid(
                "an ELF symbol's section index (st_shndx) is out of range",
            ));
        }
    }
    Ok(())
}

/// A relocation section: 16- (`REL`) or 24-byte (`RELA`) entries, a symbol table as
/// `sh_link`, a section index as `sh_info`, and symbol indices within the table.
fn check_relocations(
    b: &Bytes<'_>,
    sections: &[Section],
    rel: &Section,
    shnum: u64,
) -> Result<(), CudaError> {
    let entsize = if rel.ty == REL { 16 } else { 24 };
    if rel.entsize != entsize || !rel.size.is_multiple_of(entsize) {
        return Err(invalid(
            "an ELF relocation section's entries must be 16 (REL) or 24 (RELA) bytes and \
             its size a multiple of that",
        ));
    }
    let symbols = section(sections, rel.link)
        .filter(|s| matches!(s.ty, SYMTAB | DYNSYM))
        .ok_or(invalid(
            "an ELF relocation section's sh_link must be a symbol table",
        ))?
        .size
        / SYM_SIZE;
    if rel.info >= shnum {
        return Err(invalid(
            "an ELF relocation section's target (sh_info) is not a section index",
        ));
    }
    for i in 0..rel.size / entsize {
        // `r_info` (after `r_offset`) holds the symbol index in its high 32 bits.
        let Some(r_info) = rel
            .record(i, entsize)
            .and_then(|at| b.u64(at.checked_add(8)?))
        else {
            return Err(invalid("an ELF section lies past the end of the image"));
        };
        if r_info >> 32 >= symbols {
            return Err(invalid(
                "an ELF relocation's symbol index is out of its symbol table's range",
            ));
        }
    }
    Ok(())
}

/// A fatbin whose entries lie within its length, which lies within the image; its
/// uncompressed ELF entries are checked as cubins.
fn check_fatbin(b: &Bytes<'_>) -> Result<(), CudaError> {
    let (header, body) = (b.u16(6), b.u64(8));
    if !b.holds(header, 1, body) {
        return Err(invalid(
            "the fatbin's header says it is longer than the image",
        ));
    }
    // No overflow: `holds` checked `header + body` against the length.
    let end = header.unwrap_or(0) + body.unwrap_or(0);
    let mut at = header.unwrap_or(0);
    // Each entry: kind at +0, header size at +4, payload size at +8, flags at +40.
    while at < end {
        let (h, size) = (
            at.checked_add(4).and_then(|p| b.u32(p)).unwrap_or(0),
            at.checked_add(8).and_then(|p| b.u64(p)),
        );
        let payload_end = at
            .checked_add(h)
            .zip(size)
            .and_then(|(p, s)| p.checked_add(s));
        let Some(payload_end) = payload_end.filter(|&e| h >= 64 && e <= end) else {
            return Err(invalid("a fatbin entry lies past the end of the fatbin"));
        };
        const ELF: u64 = 2;
        const COMPRESSED: u64 = 0x2000;
        let flags = at.checked_add(40).and_then(|p| b.u64(p)).unwrap_or(0);
        if b.u16(at) == Some(ELF) && flags & COMPRESSED == 0 {
            let payload = usize::try_from(at + h)
                .ok()
                .zip(usize::try_from(payload_end).ok())
                .and_then(|(start, stop)| b.0.get(start..stop));
            check_elf(payload.unwrap_or_default())?;
        }
        // Progress: `h >= 64`.
        at = payload_end;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn elf() -> Vec<u8> {
        let mut e = vec![0u8; 64];
        e[..6].copy_from_slice(b"\x7fELF\x02\x01");
        e
    }

    #[test]
    fn elf_headers_and_contents_must_lie_within_the_image() {
        assert_eq!(image_kind(&elf()), Ok(Image::Cubin));
        // One program header at 64 whose segment claims 4 KiB at offset 0.
        let mut e = elf();
        e[0x20..0x28].copy_from_slice(&64u64.to_le_bytes());
        e[0x36..0x38].copy_from_slice(&56u16.to_le_bytes());
        e[0x38..0x3A].copy_from_slice(&1u16.to_le_bytes());
        e.resize(64 + 56, 0);
        assert_eq!(image_kind(&e), Ok(Image::Cubin), "an empty segment fits");
        e[64 + 0x20..64 + 0x28].copy_from_slice(&4096u64.to_le_bytes());
        assert!(matches!(image_kind(&e), Err(CudaError::InvalidImage(m)) if m.contains("segment")));
        // A program-header size other than 56 is refused, not trusted.
        let mut e = elf();
        e[0x20..0x28].copy_from_slice(&63u64.to_le_bytes());
        e[0x36..0x38].copy_from_slice(&1u16.to_le_bytes());
        e[0x38..0x3A].copy_from_slice(&1u16.to_le_bytes());
        assert!(image_kind(&e).is_err());
        // Extended numbering and big-endian files are refused.
        let mut e = elf();
        e[0x28..0x30].copy_from_slice(&64u64.to_le_bytes());
        assert!(image_kind(&e).is_err());
        let mut e = elf();
        e[5] = 2;
        assert!(image_kind(&e).is_err());
    }

    #[test]
    fn a_fatbin_entry_must_have_a_full_header_and_its_elf_is_checked() {
        let fatbin = |kind: u16, header: u32, payload: &[u8]| {
            let mut e = vec![0u8; header as usize];
            e[..2].copy_from_slice(&kind.to_le_bytes());
            e[4..8].copy_from_slice(&header.to_le_bytes());
            e[8..16].copy_from_slice(&(payload.len() as u64).to_le_bytes());
            e.extend_from_slice(payload);
            let mut f = vec![0u8; 16];
            f[..4].copy_from_slice(&0xBA55_ED50u32.to_le_bytes());
            f[6..8].copy_from_slice(&16u16.to_le_bytes());
            f[8..16].copy_from_slice(&(e.len() as u64).to_le_bytes());
            f.extend(e);
            f
        };
        assert_eq!(image_kind(&fatbin(2, 64, &elf())), Ok(Image::Fatbin));
        assert!(
            image_kind(&fatbin(2, 16, &elf())).is_err(),
            "a 16-byte entry header"
        );
        let mut bad = elf();
        bad[5] = 2;
        assert!(
            image_kind(&fatbin(2, 64, &bad)).is_err(),
            "the ELF inside is checked"
        );
        assert_eq!(image_kind(&fatbin(1, 64, b"ptx")), Ok(Image::Fatbin));
        // The ELF inside gets the section checks too.
        let mut bad = cubin();
        set(&mut bad, NAMES, 0x04, 8u32); // the section-name table made NOBITS
        assert!(image_kind(&fatbin(2, 64, &bad)).is_err());
        assert_eq!(image_kind(&fatbin(2, 64, &cubin())), Ok(Image::Fatbin));
    }

    // Section indices of `cubin()`.
    const NAMES: usize = 1;
    const STRINGS: usize = 2;
    const SYMBOLS: usize = 3;
    const TEXT: usize = 4;
    const RELOCS: usize = 5;
    const GLOBALS: usize = 6;
    const SHNUM: u32 = 7;

    /// A small cubin-shaped ELF: null, `.shstrtab`, `.strtab`, `.symtab` (null symbol
    /// and `k` in `.text.k`), `.text.k`, `.rel.text.k` (one relocation against `k`)
    /// and `.nv.global` (NOBITS, its offset past the end as NOBITS offsets may be).
    fn cubin() -> Vec<u8> {
        let shstrtab = b"\0.shstrtab\0.strtab\0.symtab\0.text.k\0.rel.text.k\0.nv.global\0";
        let strtab = b"\0k\0";
        let mut symtab = vec![0u8; 48];
        symtab[24..28].copy_from_slice(&1u32.to_le_bytes()); // "k"
        symtab[24 + 6..24 + 8].copy_from_slice(&(TEXT as u16).to_le_bytes());
        let text = [0u8; 16];
        let mut rel = vec![0u8; 16];
        rel[8..16].copy_from_slice(&((1u64 << 32) | 1).to_le_bytes()); // symbol 1, type 1
        // (type, name, link, info, entsize, contents, NOBITS size)
        #[allow(clippy::type_complexity)]
        let sections: [(u32, u32, u32, u32, u64, &[u8], u64); 7] = [
            (0, 0, 0, 0, 0, &[], 0),
            (3, 1, 0, 0, 0, shstrtab, 0),
            (3, 11, 0, 0, 0, strtab, 0),
            (2, 19, STRINGS as u32, 1, 24, &symtab, 0),
            (1, 27, 0, 0, 0, &text, 0),
            (9, 35, SYMBOLS as u32, TEXT as u32, 16, &rel, 0),
            (8, 47, 0, 0, 0, &[], 4096),
        ];
        let mut e = elf();
        let mut offsets = Vec::new();
        for s in &sections {
            offsets.push(e.len() as u64);
            e.extend_from_slice(s.5);
        }
        let shoff = e.len() as u64;
        for (i, (ty, name, link, info, entsize, data, nobits)) in sections.iter().enumerate() {
            let mut h = [0u8; 64];
            h[0..4].copy_from_slice(&name.to_le_bytes());
            h[4..8].copy_from_slice(&ty.to_le_bytes());
            let offset = if *ty == 8 { 1 << 40 } else { offsets[i] };
            h[0x18..0x20].copy_from_slice(&offset.to_le_bytes());
            let size = if *ty == 8 { *nobits } else { data.len() as u64 };
            h[0x20..0x28].copy_from_slice(&size.to_le_bytes());
            h[0x28..0x2C].copy_from_slice(&link.to_le_bytes());
            h[0x2C..0x30].copy_from_slice(&info.to_le_bytes());
            h[0x38..0x40].copy_from_slice(&entsize.to_le_bytes());
            e.extend_from_slice(&h);
        }
        e[0x28..0x30].copy_from_slice(&shoff.to_le_bytes());
        e[0x3A..0x3C].copy_from_slice(&64u16.to_le_bytes());
        e[0x3C..0x3E].copy_from_slice(&(sections.len() as u16).to_le_bytes());
        e[0x3E..0x40].copy_from_slice(&(NAMES as u16).to_le_bytes());
        e
    }

    /// A little-endian field of width `size_of::<T>()` at `field` of section `i`'s header.
    fn set<T: ToLeBytes>(e: &mut [u8], i: usize, field: usize, value: T) {
        let shoff = u64::from_le_bytes(e[0x28..0x30].try_into().unwrap()) as usize;
        let at = shoff + i * 64 + field;
        let bytes = value.to_le();
        e[at..at + bytes.len()].copy_from_slice(&bytes);
    }

    /// Where section `i`'s contents start.
    fn contents(e: &[u8], i: usize) -> usize {
        let shoff = u64::from_le_bytes(e[0x28..0x30].try_into().unwrap()) as usize;
        let at = shoff + i * 64 + 0x18;
        u64::from_le_bytes(e[at..at + 8].try_into().unwrap()) as usize
    }

    trait ToLeBytes {
        fn to_le(self) -> Vec<u8>;
    }
    impl ToLeBytes for u32 {
        fn to_le(self) -> Vec<u8> {
            self.to_le_bytes().to_vec()
        }
    }
    impl ToLeBytes for u64 {
        fn to_le(self) -> Vec<u8> {
            self.to_le_bytes().to_vec()
        }
    }

    /// `image_kind` refuses `e` with a reason containing `rule`.
    #[track_caller]
    fn refused(e: &[u8], rule: &str) {
        match image_kind(e) {
            Err(CudaError::InvalidImage(m)) if m.contains(rule) => {}
            other => panic!("expected a refusal naming {rule:?}, got {other:?}"),
        }
    }

    #[test]
    fn a_well_formed_cubin_passes() {
        assert_eq!(image_kind(&cubin()), Ok(Image::Cubin));
        // Special symbol section indices (SHN_ABS) are not section indices.
        let mut e = cubin();
        let sym = contents(&e, SYMBOLS) + 24;
        e[sym + 6..sym + 8].copy_from_slice(&0xFFF1u16.to_le_bytes());
        assert_eq!(image_kind(&e), Ok(Image::Cubin));
    }

    #[test]
    fn the_section_name_table_must_have_contents_in_the_image() {
        // e_shstrndx naming the NOBITS section, whose offset lies far past the end.
        let mut e = cubin();
        e[0x3E..0x40].copy_from_slice(&(GLOBALS as u16).to_le_bytes());
        refused(&e, "section-name table must be");
        // The null section: no contents at all.
        let mut e = cubin();
        e[0x3E..0x40].copy_from_slice(&0u16.to_le_bytes());
        refused(&e, "section-name table must be");
        // The table itself made NOBITS.
        let mut e = cubin();
        set(&mut e, NAMES, 0x04, 8u32);
        refused(&e, "section-name table must be");
        // Not NUL-terminated: a name read from it would run off its end.
        let mut e = cubin();
        let last = contents(&e, STRINGS) - 1;
        e[last] = b'x';
        refused(&e, "section-name table must be");
    }

    #[test]
    fn every_section_name_lies_within_the_section_name_table() {
        let mut e = cubin();
        set(&mut e, TEXT, 0x00, 1000u32);
        refused(&e, "sh_name");
        // Even a NOBITS section's, and one just past the end.
        let mut e = cubin();
        let len = (contents(&e, STRINGS) - contents(&e, NAMES)) as u32;
        set(&mut e, GLOBALS, 0x00, len);
        refused(&e, "sh_name");
    }

    #[test]
    fn every_sh_link_is_a_section_index() {
        let mut e = cubin();
        set(&mut e, TEXT, 0x28, SHNUM);
        refused(&e, "sh_link is not a section index");
        let mut e = cubin();
        set(&mut e, GLOBALS, 0x28, u32::MAX);
        refused(&e, "sh_link is not a section index");
    }

    #[test]
    fn symbol_tables_have_elf64_sym_entries_and_a_readable_string_table() {
        let mut e = cubin();
        set(&mut e, SYMBOLS, 0x38, 16u64);
        refused(&e, "entries must be 24 bytes");
        let mut e = cubin();
        set(&mut e, SYMBOLS, 0x20, 47u64);
        refused(&e, "entries must be 24 bytes");
        // The string table NOBITS, the null section, or not NUL-terminated.
        let mut e = cubin();
        set(&mut e, SYMBOLS, 0x28, GLOBALS as u32);
        refused(&e, "symbol table's string table");
        let mut e = cubin();
        set(&mut e, SYMBOLS, 0x28, 0u32);
        refused(&e, "symbol table's string table");
        let mut e = cubin();
        let last = contents(&e, SYMBOLS) - 1;
        e[last] = b'k';
        refused(&e, "symbol table's string table");
    }

    #[test]
    fn symbols_name_strings_and_sections_in_range() {
        let mut e = cubin();
        let sym = contents(&e, SYMBOLS) + 24;
        e[sym..sym + 4].copy_from_slice(&3u32.to_le_bytes()); // .strtab holds 3 bytes
        refused(&e, "st_name");
        let mut e = cubin();
        e[sym + 6..sym + 8].copy_from_slice(&(SHNUM as u16).to_le_bytes());
        refused(&e, "st_shndx");
        e[sym + 6..sym + 8].copy_from_slice(&0xFEFFu16.to_le_bytes());
        refused(&e, "st_shndx");
    }

    #[test]
    fn relocation_sections_link_a_symbol_table_and_a_section() {
        let mut e = cubin();
        set(&mut e, RELOCS, 0x28, STRINGS as u32);
        refused(&e, "sh_link must be a symbol table");
        let mut e = cubin();
        set(&mut e, RELOCS, 0x28, 0u32);
        refused(&e, "sh_link must be a symbol table");
        let mut e = cubin();
        set(&mut e, RELOCS, 0x2C, SHNUM);
        refused(&e, "sh_info");
        // REL entries are 16 bytes; a RELA section with them is refused too.
        let mut e = cubin();
        set(&mut e, RELOCS, 0x38, 24u64);
        refused(&e, "16 (REL) or 24 (RELA)");
        let mut e = cubin();
        set(&mut e, RELOCS, 0x04, 4u32);
        refused(&e, "16 (REL) or 24 (RELA)");
        let mut e = cubin();
        set(&mut e, RELOCS, 0x20, 8u64);
        refused(&e, "16 (REL) or 24 (RELA)");
        // A relocation against symbol 2 of a two-symbol table.
        let mut e = cubin();
        let r = contents(&e, RELOCS);
        e[r + 8..r + 16].copy_from_slice(&((2u64 << 32) | 1).to_le_bytes());
        refused(&e, "symbol index");
    }

    #[test]
    fn symbol_tables_may_not_be_walked_more_than_the_image_holds() {
        /// `cubin()` whose section headers `copies` all describe one symbol table
        /// of `symbols` entries at the end of the image.
        fn shared_table(symbols: usize, copies: &[usize]) -> Vec<u8> {
            let mut e = cubin();
            let at = e.len() as u64;
            for _ in 0..symbols {
                let mut sym = [0u8; 24];
                sym[6..8].copy_from_slice(&(TEXT as u16).to_le_bytes());
                e.extend_from_slice(&sym);
            }
            for &i in copies {
                set(&mut e, i, 0x04, 2u32);
                set(&mut e, i, 0x18, at);
                set(&mut e, i, 0x20, (symbols * 24) as u64);
                set(&mut e, i, 0x28, STRINGS as u32);
                set(&mut e, i, 0x38, 24u64);
            }
            e
        }
        let (small, big) = (shared_table(2, &[SYMBOLS, TEXT, GLOBALS]), 200);
        assert_eq!(
            image_kind(&small),
            Ok(Image::Cubin),
            "three short walks fit"
        );
        assert_eq!(image_kind(&shared_table(big, &[SYMBOLS])), Ok(Image::Cubin));
        // The same 4800 bytes walked three times: longer than the image.
        refused(
            &shared_table(big, &[SYMBOLS, TEXT, GLOBALS]),
            "together are longer than the image",
        );
    }

    /// Real cubins from NVRTC (see `testdata/k.cu`): executable, with a 4 MiB
    /// `NOBITS` `.nv.global`; and relocatable, with CUDA's own types for `.nv.global`
    /// and `.nv.shared.k`, neither in the file.
    const REAL: [&[u8]; 2] = [
        include_bytes!("testdata/k_sm90.cubin"),
        include_bytes!("testdata/k_sm90_rdc.cubin"),
    ];

    #[test]
    fn real_cubins_pass_and_their_section_name_table_cannot_be_a_nobits_one() {
        for (cubin, global) in REAL.into_iter().zip([18u16, 19]) {
            assert_eq!(image_kind(cubin), Ok(Image::Cubin));
            let shoff = u64::from_le_bytes(cubin[0x28..0x30].try_into().unwrap()) as usize;
            let ty = shoff + global as usize * 64 + 4;
            assert!(matches!(cubin[ty], 8 | 7), "section {global} is .nv.global");
            let mut e = cubin.to_vec();
            e[0x3E..0x40].copy_from_slice(&global.to_le_bytes());
            refused(&e, "section-name table must be");
        }
    }

    #[test]
    fn mutated_real_cubins_never_panic() {
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        let mut rand = |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n.max(1) as u64) as usize
        };
        const VALUES: [u64; 8] = [0, 1, 8, 24, 0xFF00, 0xFFFF, u32::MAX as u64, u64::MAX];
        for round in 0..2000 {
            let mut e = REAL[round % 2].to_vec();
            let shoff = u64::from_le_bytes(e[0x28..0x30].try_into().unwrap()) as usize;
            for _ in 0..1 + rand(3) {
                // Mostly section-header fields, symbols and relocations; sometimes
                // anywhere, or a cut.
                let at = match rand(4) {
                    0 => rand(e.len()),
                    1 => 0x3E,
                    _ => shoff + rand(e.len().saturating_sub(shoff)),
                };
                let width = [1, 2, 4, 8][rand(4)];
                let value = VALUES[rand(VALUES.len())].to_le_bytes();
                if rand(10) == 0 {
                    e.truncate(at);
                } else if let Some(dst) = e.get_mut(at..at + width) {
                    dst.copy_from_slice(&value[..width]);
                }
            }
            let _ = image_kind(&e);
        }
    }
}
