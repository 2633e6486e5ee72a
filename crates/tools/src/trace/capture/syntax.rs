//! The lexis of strace's log: top-level arguments, results, descriptor annotations, C
//! strings, numbers, symbolic flag sets and errno names.

/// Split `ARGS) ...` at top-level commas; returns the arguments and the index of the
/// closing parenthesis.
pub(super) fn split_args(s: &str) -> Option<(Vec<String>, usize)> {
    let b = s.as_bytes();
    let mut args = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            b'(' | b'[' | b'{' => depth += 1,
            // An annotation `<...>` follows a descriptor number or AT_FDCWD.
            b'<' if i > 0
                && (b[i - 1].is_ascii_digit() || b[i - 1] == b'D' || b[i - 1] == b'>') =>
            {
                let mut d = 1;
                i += 1;
                while i < b.len() && d > 0 {
                    match b[i] {
                        b'<' => d += 1,
                        b'>' => d -= 1,
                        _ => {}
                    }
                    i += 1;
                }
                continue;
            }
            b']' | b'}' => depth -= 1,
            b')' => {
                if depth == 0 {
                    let last = s[start..i].trim();
                    if !last.is_empty() || !args.is_empty() {
                        args.push(last.to_string());
                    }
                    return Some((args, i));
                }
                depth -= 1;
            }
            b',' if depth == 0 => {
                args.push(s[start..i].trim().to_string());
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// `RESULT[<annotation>] [ERRNO (text)]`: the number (minus the errno on failure) and the
/// annotation's path.
pub(super) fn parse_result(s: &str) -> Option<(i64, Option<String>)> {
    let s = s.trim();
    if s.starts_with('?') {
        return Some((0, None));
    }
    let num_end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .unwrap_or(s.len());
    let num = &s[..num_end];
    let rest = &s[num_end..];
    let v = if let Some(h) = num.strip_prefix("0x") {
        i64::from_str_radix(h, 16).ok().map(|v| v.max(0))?
    } else {
        num.parse::<i64>().ok()?
    };
    if v < 0 {
        let name = rest.split_whitespace().next().unwrap_or("");
        return Some((-(errno_of(name) as i64), None));
    }
    let ann = rest
        .strip_prefix('<')
        .map(|a| annotation_path(&format!("<{a}")));
    Some((v, ann.flatten()))
}

/// The path inside a descriptor's annotation (`</a/b>` or `</dev/null<char 1:3>>`), when it
/// names a path.
pub(super) fn annotation_path(a: &str) -> Option<String> {
    let inner = a.strip_prefix('<')?;
    let inner = inner.strip_suffix('>').unwrap_or(inner);
    // A device's `<char 1:3>` suffix.
    let inner = match inner.rfind('<') {
        Some(i) if inner.ends_with('>') => &inner[..i],
        _ => inner,
    };
    inner.starts_with('/').then(|| unescape(inner))
}

/// A descriptor argument's number (`3</a/b>`, `3`, `AT_FDCWD` is none).
pub(super) fn fd_num(s: &str) -> Option<i32> {
    let end = s.find('<').unwrap_or(s.len());
    s[..end].trim().parse().ok()
}

/// A descriptor argument's path (`3</a/b>` or `AT_FDCWD</cwd>`).
pub(super) fn fd_path(s: &str) -> Option<String> {
    let i = s.find('<')?;
    annotation_path(&s[i..]).map(|p| normalize(&p))
}

/// A quoted string's content, unescaped (`None` when not a string).
pub(super) fn unquote(s: &str) -> Option<String> {
    let s = s.trim();
    let s = s.strip_suffix("...").unwrap_or(s);
    let inner = s.strip_prefix('"')?.strip_suffix('"')?;
    Some(unescape(inner))
}

/// strace's C escapes: `\"`, `\\`, `\n`, `\t`, `\xHH`, octal.
pub(super) fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 1 < b.len() {
            i += 1;
            match b[i] {
                b'n' => out.push(b'\n'),
                b't' => out.push(b'\t'),
                b'r' => out.push(b'\r'),
                b'v' => out.push(0x0b),
                b'f' => out.push(0x0c),
                b'x' => {
                    let h = std::str::from_utf8(&b[i + 1..(i + 3).min(b.len())]).unwrap_or("");
                    if let Ok(v) = u8::from_str_radix(h, 16) {
                        out.push(v);
                        i += 2;
                    }
                }
                b'0'..=b'7' => {
                    let mut v = 0u32;
                    let mut k = 0;
                    while k < 3 && i < b.len() && (b'0'..=b'7').contains(&b[i]) {
                        v = v * 8 + (b[i] - b'0') as u32;
                        i += 1;
                        k += 1;
                    }
                    out.push(v as u8);
                    continue;
                }
                c => out.push(c),
            }
            i += 1;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Remove `.`, `..` and repeated slashes (lexically).
pub fn normalize(p: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for c in p.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            c => parts.push(c),
        }
    }
    format!("/{}", parts.join("/"))
}

/// A number: decimal, `0x` hex or `0` octal (strace prints modes as `0644`).
pub(super) fn number(s: &str) -> Option<u64> {
    let s = s.trim();
    if let Some(h) = s.strip_prefix("0x") {
        u64::from_str_radix(h, 16).ok()
    } else if s.len() > 1 && s.starts_with('0') && s.bytes().all(|b| b.is_ascii_digit()) {
        u64::from_str_radix(&s[1..], 8).ok()
    } else {
        s.parse().ok()
    }
}

pub(super) fn signed(s: &str) -> Option<i64> {
    let s = s.trim();
    match s.strip_prefix('-') {
        Some(r) => number(r).map(|v| -(v as i64)),
        None => number(s).map(|v| v as i64),
    }
}

/// `{a=1, flags=X|Y, ...}`'s field.
pub(super) fn struct_field<'a>(s: &'a str, field: &str) -> Option<&'a str> {
    let inner = s.trim().strip_prefix('{')?;
    let key = format!("{field}=");
    let mut depth = 0;
    let mut start = 0;
    let b = inner.as_bytes();
    for i in 0..=b.len() {
        let end = i == b.len() || (depth == 0 && (b[i] == b',' || b[i] == b'}'));
        if end {
            let part = inner[start..i].trim();
            if let Some(v) = part.strip_prefix(&key) {
                return Some(v);
            }
            start = i + 1;
            continue;
        }
        match b[i] {
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth -= 1,
            _ => {}
        }
    }
    None
}

/// The total length of an iovec array `[{iov_base=""..., iov_len=4096}, ...]`.
pub(super) fn iov_total(s: &str) -> u64 {
    s.split("iov_len=")
        .skip(1)
        .filter_map(|x| {
            let end = x
                .find(|c: char| !c.is_ascii_alphanumeric())
                .unwrap_or(x.len());
            number(&x[..end])
        })
        .sum()
}

/// A symbolic flag set (`O_WRONLY|O_CREAT|0x80000`) as Linux's number; unknown names count
/// as 0.
pub(super) fn flags(s: &str) -> u64 {
    s.split('|')
        .map(|p| {
            let p = p.trim();
            number(p).unwrap_or_else(|| flag_value(p))
        })
        .fold(0, |a, b| a | b)
}

pub(super) fn flag_value(name: &str) -> u64 {
    let v: i64 = match name {
        "O_RDONLY" | "F_OK" | "SEEK_SET" | "PROT_NONE" | "AT_STATX_SYNC_AS_STAT" => 0,
        "O_WRONLY" => libc::O_WRONLY as i64,
        "O_RDWR" => libc::O_RDWR as i64,
        "O_CREAT" => libc::O_CREAT as i64,
        "O_EXCL" => libc::O_EXCL as i64,
        "O_NOCTTY" => libc::O_NOCTTY as i64,
        "O_TRUNC" => libc::O_TRUNC as i64,
        "O_APPEND" => libc::O_APPEND as i64,
        "O_NONBLOCK" | "O_NDELAY" => libc::O_NONBLOCK as i64,
        "O_DSYNC" => libc::O_DSYNC as i64,
        "O_SYNC" => libc::O_SYNC as i64,
        "O_ASYNC" | "FASYNC" => libc::O_ASYNC as i64,
        "O_DIRECT" => libc::O_DIRECT as i64,
        "O_LARGEFILE" => libc::O_LARGEFILE as i64,
        "O_DIRECTORY" => libc::O_DIRECTORY as i64,
        "O_NOFOLLOW" => libc::O_NOFOLLOW as i64,
        "O_NOATIME" => libc::O_NOATIME as i64,
        "O_CLOEXEC" => libc::O_CLOEXEC as i64,
        "O_PATH" => libc::O_PATH as i64,
        "O_TMPFILE" => libc::O_TMPFILE as i64,
        "AT_SYMLINK_NOFOLLOW" => libc::AT_SYMLINK_NOFOLLOW as i64,
        "AT_REMOVEDIR" | "AT_EACCESS" => libc::AT_REMOVEDIR as i64,
        "AT_SYMLINK_FOLLOW" => libc::AT_SYMLINK_FOLLOW as i64,
        "AT_NO_AUTOMOUNT" => libc::AT_NO_AUTOMOUNT as i64,
        "AT_EMPTY_PATH" => libc::AT_EMPTY_PATH as i64,
        "R_OK" => libc::R_OK as i64,
        "W_OK" => libc::W_OK as i64,
        "X_OK" => libc::X_OK as i64,
        "SEEK_CUR" => 1,
        "SEEK_END" => 2,
        "SEEK_DATA" => 3,
        "SEEK_HOLE" => 4,
        "PROT_READ" => libc::PROT_READ as i64,
        "PROT_WRITE" => libc::PROT_WRITE as i64,
        "PROT_EXEC" => libc::PROT_EXEC as i64,
        "MAP_SHARED" => libc::MAP_SHARED as i64,
        "MAP_PRIVATE" => libc::MAP_PRIVATE as i64,
        "MAP_FIXED" => libc::MAP_FIXED as i64,
        "MAP_ANONYMOUS" | "MAP_ANON" => libc::MAP_ANONYMOUS as i64,
        "MAP_DENYWRITE" => libc::MAP_DENYWRITE as i64,
        "MAP_POPULATE" => libc::MAP_POPULATE as i64,
        "MAP_NORESERVE" => libc::MAP_NORESERVE as i64,
        "CLONE_VM" => libc::CLONE_VM as i64,
        "CLONE_FS" => libc::CLONE_FS as i64,
        "CLONE_FILES" => libc::CLONE_FILES as i64,
        "CLONE_SIGHAND" => libc::CLONE_SIGHAND as i64,
        "CLONE_THREAD" => libc::CLONE_THREAD as i64,
        "CLONE_VFORK" => libc::CLONE_VFORK as i64,
        "CLONE_SYSVSEM" => libc::CLONE_SYSVSEM as i64,
        "CLONE_SETTLS" => libc::CLONE_SETTLS as i64,
        "CLONE_PARENT_SETTID" => libc::CLONE_PARENT_SETTID as i64,
        "CLONE_CHILD_CLEARTID" => libc::CLONE_CHILD_CLEARTID as i64,
        "CLONE_CHILD_SETTID" => libc::CLONE_CHILD_SETTID as i64,
        "SIGCHLD" => libc::SIGCHLD as i64,
        "RENAME_NOREPLACE" => 1,
        "RENAME_EXCHANGE" => 2,
        "RENAME_WHITEOUT" => 4,
        "FALLOC_FL_KEEP_SIZE" => 1,
        "FALLOC_FL_PUNCH_HOLE" => 2,
        "FALLOC_FL_COLLAPSE_RANGE" => 8,
        "FALLOC_FL_ZERO_RANGE" => 0x10,
        "FALLOC_FL_INSERT_RANGE" => 0x20,
        _ => 0,
    };
    v as u64
}

/// An errno name's number (ERESTARTSYS and its kin are the kernel's internal 512..516).
pub(super) fn errno_of(name: &str) -> i32 {
    match name {
        "EPERM" => libc::EPERM,
        "ENOENT" => libc::ENOENT,
        "ESRCH" => libc::ESRCH,
        "EINTR" => libc::EINTR,
        "EIO" => libc::EIO,
        "ENXIO" => libc::ENXIO,
        "E2BIG" => libc::E2BIG,
        "ENOEXEC" => libc::ENOEXEC,
        "EBADF" => libc::EBADF,
        "ECHILD" => libc::ECHILD,
        "EAGAIN" => libc::EAGAIN,
        "ENOMEM" => libc::ENOMEM,
        "EACCES" => libc::EACCES,
        "EFAULT" => libc::EFAULT,
        "EBUSY" => libc::EBUSY,
        "EEXIST" => libc::EEXIST,
        "EXDEV" => libc::EXDEV,
        "ENODEV" => libc::ENODEV,
        "ENOTDIR" => libc::ENOTDIR,
        "EISDIR" => libc::EISDIR,
        "EINVAL" => libc::EINVAL,
        "ENFILE" => libc::ENFILE,
        "EMFILE" => libc::EMFILE,
        "ENOTTY" => libc::ENOTTY,
        "ETXTBSY" => libc::ETXTBSY,
        "EFBIG" => libc::EFBIG,
        "ENOSPC" => libc::ENOSPC,
        "ESPIPE" => libc::ESPIPE,
        "EROFS" => libc::EROFS,
        "EMLINK" => libc::EMLINK,
        "EPIPE" => libc::EPIPE,
        "ERANGE" => libc::ERANGE,
        "ENAMETOOLONG" => libc::ENAMETOOLONG,
        "ENOSYS" => libc::ENOSYS,
        "ENOTEMPTY" => libc::ENOTEMPTY,
        "ELOOP" => libc::ELOOP,
        "ENODATA" => libc::ENODATA,
        "EOPNOTSUPP" | "ENOTSUP" => libc::EOPNOTSUPP,
        "EOVERFLOW" => libc::EOVERFLOW,
        "EDQUOT" => libc::EDQUOT,
        "ESTALE" => libc::ESTALE,
        "ERESTARTSYS" => 512,
        "ERESTARTNOINTR" => 513,
        "ERESTARTNOHAND" => 514,
        "ENOIOCTLCMD" => 515,
        "ERESTART_RESTARTBLOCK" => 516,
        _ => libc::EIO,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_normalise_and_strings_unescape() {
        assert_eq!(normalize("/a/./b/../c//d/"), "/a/c/d");
        assert_eq!(normalize("/.."), "/");
        assert_eq!(unescape(r#"a\"b\\c\x41\101\n"#), "a\"b\\cAA\n");
        assert_eq!(number("0644"), Some(0o644));
        assert_eq!(number("0x10"), Some(16));
        assert_eq!(number("0"), Some(0));
        assert_eq!(
            flags("O_WRONLY|O_CREAT|0x100000"),
            (libc::O_WRONLY | libc::O_CREAT) as u64 | 0x100000
        );
    }
}
