//! The heap: objects behind handles, interned strings, and a mark-sweep
//! collector.
//!
//! Objects live in a `Vec` of slots; an [`ObjRef`] is a slot's index, and
//! freed slots are reused. The collector runs when the bytes allocated
//! since the last collection pass a bound that doubles with the live bytes
//! (as clox's does), at points the VM chooses: there it hands over its roots
//! ([`Heap::collect`]). Strings are interned: one object per distinct text,
//! so that string equality and table keys are handle comparisons. The
//! intern table holds its strings weakly: a string nothing else reaches is
//! dropped from it when swept.

use std::rc::Rc;

use rustc_hash::FxHashMap;

use crate::value::{Closure, Function, Obj, ObjRef, Upvalue, Value};

/// The first collection's bound, in bytes.
const FIRST_GC: usize = 1024 * 1024;

/// How much the bound grows past the live bytes after a collection.
const GC_GROWTH: usize = 2;

/// All objects of one VM.
pub struct Heap {
    slots: Vec<Option<Obj>>,
    marks: Vec<bool>,
    free: Vec<u32>,
    strings: FxHashMap<Box<str>, ObjRef>,
    bytes: usize,
    next_gc: usize,
    gray: Vec<ObjRef>,
    /// Functions marked in the collection under way, by address (a function
    /// is shared by all its closures).
    seen_functions: rustc_hash::FxHashSet<*const Function>,
}

impl Default for Heap {
    fn default() -> Heap {
        Heap::new()
    }
}

impl Heap {
    /// An empty heap.
    pub fn new() -> Heap {
        Heap {
            slots: Vec::new(),
            marks: Vec::new(),
            free: Vec::new(),
            strings: FxHashMap::default(),
            bytes: 0,
            next_gc: FIRST_GC,
            gray: Vec::new(),
            seen_functions: Default::default(),
        }
    }

    /// The object behind `r`.
    #[inline]
    pub fn get(&self, r: ObjRef) -> &Obj {
        self.slots[r.0 as usize].as_ref().expect("a live object")
    }

    /// The object behind `r`, to change.
    #[inline]
    pub fn get_mut(&mut self, r: ObjRef) -> &mut Obj {
        self.slots[r.0 as usize].as_mut().expect("a live object")
    }

    /// The text of the string `r`.
    pub fn str(&self, r: ObjRef) -> &str {
        match self.get(r) {
            Obj::String(s) => s,
            other => unreachable!("not a string: {other:?}"),
        }
    }

    /// Whether `v` is a string.
    pub fn is_string(&self, v: Value) -> bool {
        matches!(v, Value::Obj(r) if matches!(self.get(r), Obj::String(_)))
    }

    /// Whether enough was allocated since the last collection that the VM
    /// should collect now.
    #[inline]
    pub fn should_collect(&self) -> bool {
        self.bytes > self.next_gc
    }

    /// Bytes the live objects take (an estimate).
    pub fn bytes_allocated(&self) -> usize {
        self.bytes
    }

    /// A new object.
    pub fn alloc(&mut self, obj: Obj) -> ObjRef {
        self.bytes += size_of(&obj);
        match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = Some(obj);
                ObjRef(i)
            }
            None => {
                self.slots.push(Some(obj));
                self.marks.push(false);
                ObjRef(u32::try_from(self.slots.len() - 1).expect("fewer than 2^32 objects"))
            }
        }
    }

    /// The interned string with text `s`.
    pub fn intern(&mut self, s: &str) -> ObjRef {
        if let Some(&r) = self.strings.get(s) {
            return r;
        }
        let r = self.alloc(Obj::String(s.into()));
        self.strings.insert(s.into(), r);
        r
    }

    /// The interned string with text `s`, taking it.
    pub fn intern_owned(&mut self, s: String) -> ObjRef {
        if let Some(&r) = self.strings.get(s.as_str()) {
            return r;
        }
        let boxed: Box<str> = s.into_boxed_str();
        let r = self.alloc(Obj::String(boxed.clone()));
        self.strings.insert(boxed, r);
        r
    }

    /// A closure of `function` (its upvalues filled in by the caller).
    pub fn closure(&mut self, function: Rc<Function>, upvalues: Vec<ObjRef>) -> ObjRef {
        self.alloc(Obj::Closure(Closure { function, upvalues }))
    }

    /// Collects the objects not reachable from `roots` (values) and
    /// `root_objects`: mark, trace, sweep, and the next bound set.
    pub fn collect(&mut self, roots: impl IntoIterator<Item = Value>, root_objects: impl IntoIterator<Item = ObjRef>) {
        for v in roots {
            self.mark_value(v);
        }
        for r in root_objects {
            self.mark(r);
        }
        while let Some(r) = self.gray.pop() {
            self.trace(r);
        }
        self.sweep();
        self.seen_functions.clear();
        self.next_gc = (self.bytes * GC_GROWTH).max(FIRST_GC);
    }

    fn mark_value(&mut self, v: Value) {
        if let Value::Obj(r) = v {
            self.mark(r);
        }
    }

    fn mark(&mut self, r: ObjRef) {
        let m = &mut self.marks[r.0 as usize];
        if !*m {
            *m = true;
            self.gray.push(r);
        }
    }

    fn mark_function(&mut self, f: &Rc<Function>) {
        if !self.seen_functions.insert(Rc::as_ptr(f)) {
            return;
        }
        if let Some(name) = f.name {
            self.mark(name);
        }
        for &c in &f.chunk.constants {
            self.mark_value(c);
        }
    }

    fn trace(&mut self, r: ObjRef) {
        // The slot is taken out while its references are marked, so that
        // marking can borrow the heap; nothing reads it meanwhile.
        let obj = self.slots[r.0 as usize].take().expect("a live object");
        match &obj {
            Obj::String(_) | Obj::Native(_) => {}
            Obj::Function(f) => self.mark_function(f),
            Obj::Closure(c) => {
                self.mark_function(&c.function);
                for &u in &c.upvalues {
                    self.mark(u);
                }
            }
            Obj::Upvalue(Upvalue::Closed(v)) => self.mark_value(*v),
            Obj::Upvalue(Upvalue::Open(_)) => {}
            Obj::Class(c) => {
                self.mark(c.name);
                for (&k, &m) in &c.methods {
                    self.mark(k);
                    self.mark(m);
                }
            }
            Obj::Instance(i) => {
                self.mark(i.class);
                for (&k, &v) in &i.fields {
                    self.mark(k);
                    self.mark_value(v);
                }
            }
            Obj::BoundMethod(b) => {
                self.mark_value(b.receiver);
                self.mark(b.method);
            }
        }
        self.slots[r.0 as usize] = Some(obj);
    }

    fn sweep(&mut self) {
        let marks = &self.marks;
        self.strings.retain(|_, r| marks[r.0 as usize]);
        for (i, slot) in self.slots.iter_mut().enumerate() {
            if std::mem::take(&mut self.marks[i]) {
                continue;
            }
            if let Some(obj) = slot.take() {
                self.bytes -= size_of(&obj);
                self.free.push(i as u32);
            }
        }
    }
}

/// About how many bytes an object takes, with what it owns.
fn size_of(obj: &Obj) -> usize {
    let own = match obj {
        Obj::String(s) => s.len(),
        Obj::Function(_) | Obj::Native(_) | Obj::Upvalue(_) | Obj::BoundMethod(_) => 0,
        Obj::Closure(c) => c.upvalues.len() * 4,
        Obj::Class(_) | Obj::Instance(_) => 64,
    };
    std::mem::size_of::<Obj>() + own
}
