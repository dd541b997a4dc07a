fn main() {
    train_planner_web::start();
}
