pub trait Tally {
    fn tally(&mut self) -> bool;
}
pub struct Vm {
    code: Vec<u8>,
    pc: usize,
    fuel: u32,
    count: u32,
}
impl Vm {
    pub fn run(&mut self) -> Option<u32> {
        let self_ = self;
        {
            let mut __self_cells_value = __Vm_run_cells {
                pc: self_.pc,
                fuel: self_.fuel,
                count: self_.count,
            };
            let __self_cells = &mut __self_cells_value;
            let __self_pc_at_entry = self_.pc;
            let __self_fuel_at_entry = self_.fuel;
            let __self_count_at_entry = self_.count;
            let __self_code = &self_.code;
            let __jit_r = __Vm_run(
                __self_cells,
                __self_pc_at_entry,
                __self_fuel_at_entry,
                __self_count_at_entry,
                __self_code,
            );
            self_.pc = __self_cells_value.pc;
            self_.fuel = __self_cells_value.fuel;
            self_.count = __self_cells_value.count;
            __jit_r
        }
    }
}
///The scalar fields of `Vm` while `run` runs (see `jitgen`'s split of `self`).
#[doc(hidden)]
#[virtualizable]
#[allow(non_camel_case_types)]
pub struct __Vm_run_cells {
    pub pc: usize,
    pub fuel: u32,
    pub count: u32,
}
#[doc(hidden)]
#[allow(non_snake_case, unreachable_code, unused_parens, unused_braces)]
pub fn __Vm_run(
    __self_cells: &mut __Vm_run_cells,
    __self_pc_at_entry: usize,
    __self_fuel_at_entry: u32,
    __self_count_at_entry: u32,
    __self_code: &Vec<u8>,
) -> Option<u32> {
    #[allow(unused_mut, unused_variables)]
    let mut __self_pc = __self_pc_at_entry;
    #[allow(unused_mut, unused_variables)]
    let mut __self_fuel = __self_fuel_at_entry;
    #[allow(unused_mut, unused_variables)]
    let mut __self_count = __self_count_at_entry;
    let __self_code = hint!(__self_code, concrete);
    loop {
        hint!(global_merge_point);
        let op = hint!((* __self_code) [__self_pc], concrete);
        {
            __self_fuel = __self_fuel.checked_sub(1)?;
            __self_cells.fuel = __self_fuel;
        };
        if {
            let __jitgen_value = __self_count.tally();
            __self_cells.count = __self_count;
            __jitgen_value
        } {
            {
                __self_pc += 1;
                __self_cells.pc = __self_pc;
            };
        }
        {
            __self_fuel.tally();
            __self_cells.fuel = __self_fuel;
        };
        if op == 0 {
            return Some(__self_count.max(1));
        }
    }
}
